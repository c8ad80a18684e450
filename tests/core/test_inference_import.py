"""Beam's RunInference without Beam's ModelManager (`transforms.core.models.inference`): a graph with a
machine filter does not load torch and scipy in every process that imports it, and Beam's own
lazy import of the ModelManager still works afterwards."""
from __future__ import annotations

from tests.conftest import loaded_modules, probe_modules

HEAVY = ["torch", "scipy", "apache_beam.ml.inference.model_manager"]


def test_the_record_graphs_and_the_lexical_filter_load_no_torch():
    code = "import pipeline.graphs.record, transforms.record.machine_filter, transforms.record.readers.lexical"
    assert loaded_modules(code, HEAVY) == []


def test_beams_model_manager_still_imports_where_it_is_asked_for():
    code = ("import transforms.core.models.inference\n"
            "from apache_beam.ml.inference.model_manager import ModelManager\n"
            "print(ModelManager.__name__)")
    probe = probe_modules(code, HEAVY)
    assert probe.stdout == "ModelManager"
    assert probe.loaded == sorted(HEAVY)


def test_runinference_reads_its_memory_use_without_a_warning():
    code = ("import logging, sys\n"
            "logging.basicConfig(stream=sys.stdout)\n"
            "from transforms.core.models import inference\n"
            "from apache_beam.ml.inference import base\n"
            "print(base._get_current_process_memory_in_bytes() > 0)")
    printed = probe_modules(code, HEAVY).stdout
    assert "Resource module is not available" not in printed
    assert printed.splitlines()[-1] == "True"
