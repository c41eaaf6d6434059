"""Sweeps on Ray against ``ptlab sweep`` on local cores: the same table for
the same file; a failed task reported with its message on both paths."""

import pandas as pd
import pytest

import ptlab

#: 5 workloads x 4 geometries x 3 THP policies x 2 CPU counts x 2 reclaim
#: modes = 240 tasks of one run each.
BIG = """
name = "big"
workloads = ["anon-write", "anon-random", "thp-fault", "munmap-part", "pt-reclaim-whole"]
[config]
tlb = "zen4"
[axes]
geometry = ["x86-64-4l", "x86-64-5l", "riscv-sv39-64k", "arm64-16k-48"]
thp = ["always", "madvise", "never"]
cpus = [1, 2]
reclaim = ["off", "on"]
"""

#: One refused configuration among good ones.
WITH_BAD = """
name = "with-bad"
workloads = ["anon-write", "anon-random"]
[axes]
tlb = ["zen4", "no-such-tlb", "icelake"]
"""


def ordered(df):
    keys = ["workload", "config", "run", "mark"]
    return df.sort_values(keys, kind="stable").reset_index(drop=True)


def cli_table(cli, tmp_path, text, name):
    f = tmp_path / f"{name}.toml"
    f.write_text(text)
    out = tmp_path / f"{name}.csv"
    rc, _, err = cli("sweep", str(f), "--jobs", "2", "--out", str(out))
    return f, rc, err, ptlab.read_table(out)


def test_a_240_run_sweep_on_ray_gives_the_table_of_ptlab_sweep(cli, tmp_path, ray_local):
    f, rc, err, want = cli_table(cli, tmp_path, BIG, "big")
    assert rc == 0, err
    got = ptlab.sweep(f, progress=False)
    assert got.document["tasks"] == 240
    assert got.document["failed"] == 0
    assert (got.frame["status"] == "ok").all()
    assert len(got.frame.drop_duplicates(["workload", "config"])) == 240
    pd.testing.assert_frame_equal(ordered(got.frame), ordered(want))
    # Parquet (pyarrow) keeps the table as it is.
    got.write(tmp_path / "big.parquet")
    pd.testing.assert_frame_equal(ptlab.read_table(tmp_path / "big.parquet"), got.frame)


def test_local_threads_give_the_table_too(cli, tmp_path):
    f, rc, err, want = cli_table(cli, tmp_path, WITH_BAD, "local")
    got = ptlab.sweep(f, use_ray=False, jobs=2, progress=False)
    pd.testing.assert_frame_equal(ordered(got.frame), ordered(want))


@pytest.mark.parametrize("path", ["ray", "cli"])
def test_a_refused_configuration_is_reported_and_the_rest_complete(cli, tmp_path, path, request):
    f, rc, err, cli_frame = cli_table(cli, tmp_path, WITH_BAD, "bad")
    if path == "ray":
        request.getfixturevalue("ray_local")
        frame = ptlab.sweep(f, progress=False).frame
    else:
        assert rc == 1, "a failed task makes the exit status 1, after the table"
        frame = cli_frame
    failed = frame[frame["status"] == "failed"]
    assert len(failed) == 2, "one failed row per workload"
    assert set(failed["tlb"]) == {"no-such-tlb"}
    assert (failed["attempts"] == 2).all()
    # The message is the one `ptlab run` gives for the same configuration.
    rc1, _, err1 = cli("run", "anon-write", "--tlb", "no-such-tlb")
    assert rc1 == 2
    msg = failed[failed["workload"] == "anon-write"]["error"].iloc[0]
    assert "error: " + msg == err1.strip().splitlines()[-1]
    if path == "cli":
        assert msg in err
    ok = frame[frame["status"] == "ok"]
    assert set(ok["tlb"]) == {"zen4", "icelake"}
    assert len(ok.drop_duplicates(["workload", "tlb"])) == 4
    assert ok["minor_faults"].notna().all()


def test_a_bad_sweep_file_is_bad_input_with_the_clis_message(cli, tmp_path):
    f = tmp_path / "s.toml"
    f.write_text('workloads = ["anon-write"]\n[axes]\nthp = ["always", "sometimes"]\n')
    rc, _, err = cli("sweep", str(f))
    assert rc == 2
    with pytest.raises(ptlab.BadInput) as e:
        ptlab.sweep(f, use_ray=False)
    assert "error: " + str(e.value) == err.strip()
    assert str(e.value).startswith(f"{f}:3:18: key \"thp\": ")
