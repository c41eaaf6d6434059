"""The bindings against the command line: the same counters, documents and
messages for the same input."""

import json
import re

import pytest

import ptlab

#: ptlab's own clock (its speed): differs from run to run, never compared.
OWN_CLOCK = {"model_wall_ns"}


def validation_suite(cli_json):
    return [w["name"] for w in cli_json("workloads", "list", "--validation", "--json")]


def mark_counters(doc):
    """mark -> counters (samples of the first run), ptlab's own clock left out."""
    return {
        m["name"]: {k: v[0] for k, v in m["samples"].items() if k not in OWN_CLOCK}
        for m in doc["marks"]
    }


def strip_clock(doc):
    """A document with ptlab's own clock taken out everywhere it appears."""
    if isinstance(doc, dict):
        return {k: strip_clock(v) for k, v in doc.items() if k not in OWN_CLOCK}
    if isinstance(doc, list):
        return [strip_clock(v) for v in doc]
    return doc


def test_the_validation_suite_is_not_empty(cli_json):
    assert len(validation_suite(cli_json)) >= 30


def test_every_validation_workload_gives_the_clis_counters(cli_json):
    # One test over the suite keeps the list the CLI's own (not a copy).
    names = validation_suite(cli_json)
    for name in names:
        want = cli_json("run", name, "--json")
        got = ptlab.Machine().run(name).document
        if want.get("skipped"):
            # A need this machine does not meet (swap): skipped alike.
            assert got == want, name
            continue
        assert mark_counters(got) == mark_counters(want), name
        assert got["config"] == want["config"], name


def test_a_configured_machine_gives_the_clis_document(cli_json):
    m = ptlab.Machine(geometry="x86-64-5l", thp="always", cpus=2, pv_flush="off")
    got = m.run("thp-fault", repeat=2).document
    want = cli_json(
        "run", "thp-fault", "--geometry", "x86-64-5l", "--thp", "always", "--cpus", "2",
        "--pv-flush", "off", "--repeat", "2", "--json",
    )
    assert set(got) == set(want)
    # Same keys, same config and marks; only ptlab's own clock (and the
    # spread statistics computed from it) may differ.
    assert strip_clock(got)["config"] == want["config"]
    assert [mark_counters(got)] == [mark_counters(want)]
    assert got["runs"] == want["runs"] == 2
    # The whole document, ptlab's own clock and the host's free memory aside.
    for d in (got, want):
        d["host"].pop("mem_available_kb", None)
    assert strip_clock(got) == strip_clock(want)


def test_compare_gives_the_clis_document(cli_json):
    ms = [ptlab.Machine(geometry=g) for g in ("x86-64-4l", "riscv-sv39-64k")]
    got = ptlab.compare("anon-random", ms).document
    want = cli_json(
        "compare", "anon-random", "--config", "geometry=x86-64-4l",
        "--config", "geometry=riscv-sv39-64k", "--json",
    )
    assert [c["config"] for c in got["configs"]] == [c["config"] for c in want["configs"]]
    assert [mark_counters(c) for c in got["configs"]] == [mark_counters(c) for c in want["configs"]]


def test_workload_text_file_and_name_agree(cli, tmp_path):
    rc, text, _ = cli("workloads", "show", "anon-write")
    assert rc == 0
    path = tmp_path / "w.toml"
    path.write_text(text)
    m = ptlab.Machine(geometry="x86-64-4l")
    by_name = mark_counters(m.run("anon-write").document)
    by_file = mark_counters(m.run(path).document)
    by_text = mark_counters(m.run("w.toml", text=text).document)
    assert by_name == by_file == by_text


def test_frame_has_a_row_per_configuration_mark_and_run():
    r = ptlab.compare("anon-write", [ptlab.Machine(), ptlab.Machine(thp="never")], repeat=3)
    df = r.frame()
    marks = len(r.configs()[0]["marks"])
    assert len(df) == 2 * marks * 3
    assert set(df["config"]) == {"model", "thp=never"}
    assert sorted(df["run"].unique().tolist()) == [0, 1, 2]
    first = df[(df["config"] == "thp=never") & (df["run"] == 1)]
    for _, row in first.iterrows():
        want = r.counters(row["mark"], config=1, run=1)
        assert row["minor_faults"] == want["minor_faults"]


@pytest.mark.parametrize(
    "kwargs, args",
    [
        ({"geometry": "x86-64-6l"}, ["--geometry", "x86-64-6l"]),
        ({"locking": "fine"}, ["--locking", "fine"]),
        ({"tlb": "no-such-tlb"}, ["--tlb", "no-such-tlb"]),
    ],
)
def test_bad_configurations_raise_the_clis_message(cli, kwargs, args):
    rc, _, err = cli("run", "anon-write", *args)
    assert rc == 2
    with pytest.raises(ptlab.BadInput) as e:
        ptlab.Machine(**kwargs).run("anon-write")
    # The command line's "did you mean" hints for presets are its own
    # (docs/python.md); the rest of the message is the same.
    cli_message = re.sub(r', did you mean "[^"]*"\?', "", err.strip().splitlines()[-1])
    assert "error: " + str(e.value) == cli_message


def test_a_bad_workload_file_names_line_and_column(cli, tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text('name = "bad"\n[[thread]]\nop = [ { mmap = "a", size = "4Kb" } ]\n')
    rc, _, err = cli("run", str(path))
    assert rc == 2
    with pytest.raises(ptlab.BadInput) as e:
        ptlab.Machine().run(path)
    assert "error: " + str(e.value) == err.strip().splitlines()[-1]
    assert f"{path}:3:" in str(e.value)


def test_a_missing_workload_is_bad_input():
    with pytest.raises(ptlab.BadInput, match="no-such-workload"):
        ptlab.Machine().run("no-such-workload")


def test_the_documents_are_json_the_cli_could_have_printed():
    doc = ptlab.Machine().run("anon-write").document
    assert json.loads(json.dumps(doc)) == doc
    assert {"workload", "backend", "config", "marks", "runs", "warnings", "host"} <= set(doc)
