from transforms.core.reporting.stats import bar_lines, bin_label, describe, histogram


def test_describe():
    assert describe([1, 2, 6]) == (3.0, 6, 1)
    assert describe([]) == (0.0, 0, 0)


def test_bin_labels():
    assert [bin_label(3, 3), bin_label(13, 15), bin_label(21, 10 ** 6)] == ["3", "13-15", "21+"]


def test_histogram_counts_inclusive_bins_and_outside():
    values = [1, 2, 2, 5, 9, 40]
    assert histogram(values, [(1, 1), (2, 4), (5, 10 ** 6)]) == [("1", 1), ("2-4", 2), ("5+", 3)]
    assert histogram(values, [(1, 2), (3, 9)], outside=True) == [("1-2", 3), ("3-9", 2), ("outside", 1)]
    assert histogram([1], [(1, 2)], outside=True) == [("1-2", 1)]


def test_bar_lines_scale_to_the_largest_bin():
    lines = bar_lines([("a", 2), ("b", 1), ("c", 0)], "title", width=4)
    assert lines == ["title", "        a | #### 2", "        b | ##   1", "        c |      0"]
