"""`csdata-sdk-worker` (pipeline.worker_boot): the arguments Beam's Java runner starts it with,
and the names and descriptors it hands Beam's SDK worker. Its whole run, on real TaskManagers,
is tested in tests/flink."""
from __future__ import annotations

from apache_beam.portability.api import beam_runner_api_pb2

from pipeline.worker_boot import STAGING_ROLE, descriptor, parse_args, staged_name


def test_the_process_environment_arguments_are_read_and_unknown_ones_ignored():
    # The flags of Beam's Java ProcessEnvironmentFactory, plus one a later Beam may add.
    args = parse_args(["--id=1-1", "--provision_endpoint=localhost:40001",
                       "--artifact_endpoint=localhost:40002", "--logging_endpoint=localhost:40003",
                       "--control_endpoint=localhost:40004", "--runner_capabilities=x"])
    assert (args.id, args.provision_endpoint, args.artifact_endpoint, args.logging_endpoint,
            args.control_endpoint, args.semi_persist_dir) == (
        "1-1", "localhost:40001", "localhost:40002", "localhost:40003", "localhost:40004", "")


def test_a_staged_file_keeps_its_staged_name_and_other_roles_are_skipped():
    payload = beam_runner_api_pb2.ArtifactStagingToRolePayload(staged_name="pickled_main_session")
    staged = beam_runner_api_pb2.ArtifactInformation(role_urn=STAGING_ROLE,
                                                     role_payload=payload.SerializeToString())
    assert staged_name(staged) == "pickled_main_session"
    other = beam_runner_api_pb2.ArtifactInformation(role_urn="beam:artifact:role:pip_requirements_file:v1")
    assert staged_name(other) == ""


def test_an_endpoint_is_written_as_the_text_proto_beams_worker_parses():
    from apache_beam.portability.api import endpoints_pb2
    from google.protobuf import text_format

    parsed = text_format.Parse(descriptor("localhost:40004"), endpoints_pb2.ApiServiceDescriptor())
    assert parsed.url == "localhost:40004"
