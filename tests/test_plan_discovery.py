"""How `plan` finds its config files and names them: what a directory walk keeps, skips and
says (facts documents, non-rivet YAML, the facts and output files themselves), and the path
each config is shown under (relative to the working directory through symbolic links, as given
outside it). Pinned exactly, so making the walk cheaper cannot change a message or a name."""

from __future__ import annotations

import io
import json
import shutil
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from rivet_ci.adapters.files import PathResolver, display_path, resolved_path
from rivet_ci.cli import run
from rivet_ci.commands.context import Context
from rivet_ci.commands.plan import config_paths

REPO = Path(__file__).resolve().parent.parent
CLOCK = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
CONFIG = (REPO / "examples" / "pipelines" / "replica_a.yaml").read_text(encoding="utf-8")
FACTS = (REPO / "examples" / "facts.yaml").read_text(encoding="utf-8")
FACTS_NOTE = "is a facts document, not planned as a config"


def cli(cwd: Path, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run(list(argv), Context(stdout=out, stderr=err, environ={}, cwd=cwd,
                                   now=lambda: CLOCK))
    return code, out.getvalue(), err.getvalue()


def planned(cwd: Path, *argv: str) -> tuple[list[str], list[str]]:
    """The paths of the configs `plan --format json` planned, and its stderr lines before the
    closing notes (no facts, problems)."""
    code, out, err = cli(cwd, "plan", *argv, "--format", "json")
    assert code == 0, err
    lines = [line for line in err.splitlines() if "no facts" not in line]
    return [c["path"] for c in json.loads(out)["configs"]], lines


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A workspace: two configs, a walked facts document, a workflow (not rivet YAML) and a
    hidden directory, under `pipelines/`."""
    ws = tmp_path / "ws"
    write(ws / "pipelines" / "a.yaml", CONFIG)
    write(ws / "pipelines" / "sub" / "b.yml", CONFIG.replace("name: ", "name: b_"))
    write(ws / "pipelines" / "captured.yaml", FACTS)
    write(ws / "pipelines" / "ci.yaml", "on: push\n")
    write(ws / "pipelines" / ".hidden" / "c.yaml", CONFIG)
    return ws


def test_a_walk_says_what_it_skipped_then_each_facts_document_in_order(tree: Path) -> None:
    named = write(tree / "named-facts.yaml", FACTS)
    paths, err = planned(tree, "named-facts.yaml", "pipelines", str(named))
    assert paths == ["pipelines/a.yaml", "pipelines/sub/b.yml"]
    assert err == [
        "rivet-ci: skipped 1 hidden or virtual-env directory and 1 YAML file without a "
        "top-level `source:` or `exports:` (name a file to plan it anyway)",
        f"rivet-ci: named-facts.yaml {FACTS_NOTE}",
        f"rivet-ci: pipelines/captured.yaml {FACTS_NOTE}",
        f"rivet-ci: named-facts.yaml {FACTS_NOTE}"]


def test_a_facts_document_named_twice_or_walked_twice_is_noted_each_time(tree: Path) -> None:
    paths, err = planned(tree, "pipelines/captured.yaml", "pipelines", "pipelines/a.yaml",
                         "pipelines")
    assert paths == ["pipelines/a.yaml", "pipelines/sub/b.yml", "pipelines/a.yaml",
                     "pipelines/a.yaml", "pipelines/sub/b.yml"]
    assert err[1:] == [f"rivet-ci: pipelines/captured.yaml {FACTS_NOTE}"] * 3


def test_the_facts_and_output_files_inside_the_walk_are_left_out_silently(tree: Path) -> None:
    output = write(tree / "pipelines" / "out.yaml", CONFIG)  # a config, until the plan is written
    paths, err = planned(tree, "pipelines", "--facts", "pipelines/captured.yaml",
                         "--output", "pipelines/out.yaml")
    assert paths == ["pipelines/a.yaml", "pipelines/sub/b.yml"]
    assert not any(FACTS_NOTE in line for line in err)
    assert json.loads(output.read_text(encoding="utf-8"))["summary"]["configs"] == 2


def test_the_facts_file_is_left_out_however_it_is_reached(tree: Path) -> None:
    # through a symlinked directory, and a walked symlink to it
    (tree / "alias").symlink_to(tree / "pipelines", target_is_directory=True)
    (tree / "pipelines" / "link.yaml").symlink_to(tree / "pipelines" / "captured.yaml")
    paths, err = planned(tree, "pipelines", "--facts", "alias/captured.yaml")
    assert paths == ["pipelines/a.yaml", "pipelines/sub/b.yml"]
    assert not any(FACTS_NOTE in line for line in err)
    # named through the symlinked directory while the facts file is spelled directly
    paths, err = planned(tree, "alias/captured.yaml", "alias/a.yaml",
                         "--facts", str(tree / "pipelines" / "captured.yaml"))
    assert paths == ["pipelines/a.yaml"]
    assert err == []


def test_configs_are_shown_relative_to_the_working_directory_after_symlinks(
        tree: Path, tmp_path: Path) -> None:
    outside = write(tmp_path / "outside" / "o.yaml", CONFIG)
    (tree / "pipelines" / "in.yaml").symlink_to(tree / "pipelines" / "a.yaml")
    (tree / "pipelines" / "out.yaml").symlink_to(outside)
    (tree / "alias").symlink_to(tree / "pipelines", target_is_directory=True)
    paths, _ = planned(tree, "pipelines", "alias/a.yaml", "pipelines/sub/../a.yaml",
                       str(outside), "../outside/o.yaml")
    # (a symlink is named after its target inside the working directory, as given outside it)
    assert paths == [
        "pipelines/a.yaml", "pipelines/a.yaml", f"{tree}/pipelines/out.yaml",
        "pipelines/sub/b.yml", "pipelines/a.yaml", "pipelines/a.yaml", f"{outside}",
        f"{tree}/../outside/o.yaml"]


def test_a_working_directory_reached_through_a_symlink_names_the_same(
        tree: Path, tmp_path: Path) -> None:
    (tmp_path / "link").symlink_to(tree, target_is_directory=True)
    paths, err = planned(tmp_path / "link", "pipelines", str(tree / "pipelines" / "a.yaml"))
    assert paths == ["pipelines/a.yaml", "pipelines/sub/b.yml", "pipelines/a.yaml"]
    assert err[1:] == [f"rivet-ci: pipelines/captured.yaml {FACTS_NOTE}"]


def test_a_walked_file_that_is_not_utf8_is_kept_and_reported_never_a_facts_document(
        tree: Path) -> None:
    (tree / "pipelines" / "latin1.yaml").write_bytes(FACTS.encode("utf-8") + b"# caf\xe9\n")
    (tree / "pipelines" / "latin1-other.yaml").write_bytes(b"on: push # caf\xe9\n")
    code, out, err = cli(tree, "plan", "pipelines", "--format", "json")
    assert code == 2
    assert "2 YAML files without a top-level" in err  # ci.yaml and latin1-other.yaml
    assert [line for line in err.splitlines() if FACTS_NOTE in line] == [
        f"rivet-ci: pipelines/captured.yaml {FACTS_NOTE}"]
    assert [p["file"] for p in json.loads(out)["problems"]
            if "cannot read" in p["message"]] == ["pipelines/latin1.yaml"]


def test_check_and_pretty_plan_find_the_same_files(tree: Path) -> None:
    shutil.rmtree(tree / "pipelines" / ".hidden")
    _, out, err = cli(tree, "plan", "pipelines")
    assert "pipelines/a.yaml" in out and "pipelines/sub/b.yml" in out
    assert f"rivet-ci: pipelines/captured.yaml {FACTS_NOTE}\n" in err
    code, _, err = cli(tree, "check", "pipelines")
    assert code == 0, err
    assert f"rivet-ci: pipelines/captured.yaml {FACTS_NOTE}\n" in err


def test_finding_the_configs_reads_each_walked_file_once(
        tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    named = write(tree / "named.yaml", CONFIG)
    reads: Counter[str] = Counter()
    read_text = Path.read_text

    def counted(self: Path, *args: Any, **kwargs: Any) -> str:
        reads[self.relative_to(tree).as_posix()] += 1
        return read_text(self, *args, **kwargs)

    monkeypatch.setattr(Path, "read_text", counted)
    ctx = Context(stdout=io.StringIO(), stderr=io.StringIO(), environ={}, cwd=tree)
    found = config_paths([Path("pipelines"), named], ctx)
    assert found == [tree / "pipelines" / "a.yaml", tree / "pipelines" / "sub" / "b.yml", named]
    # (a file named on the command line is read to tell whether it is a facts document)
    assert reads == {"pipelines/a.yaml": 1, "pipelines/captured.yaml": 1, "pipelines/ci.yaml": 1,
                     "pipelines/sub/b.yml": 1, "named.yaml": 1}


def test_the_run_resolver_agrees_with_path_resolve_and_display_path(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ws = tmp_path / "ws"
    write(ws / "d" / "f.yaml", "x")
    write(tmp_path / "outside" / "g.yaml", "x")
    links = {"d/to-file.yaml": ws / "d" / "f.yaml", "d/to-outside.yaml": tmp_path / "outside",
             "dir-link": ws / "d", "out-link": tmp_path / "outside",
             "d/dangling.yaml": ws / "nowhere", "d/relative.yaml": Path("f.yaml"),
             "d/up.yaml": Path("../d/f.yaml"), "loop-a": ws / "loop-b", "loop-b": ws / "loop-a"}
    for name, target in links.items():
        (ws / name).symlink_to(target)
    (tmp_path / "ws-link").symlink_to(ws, target_is_directory=True)
    spellings = ["d/f.yaml", "d/missing.yaml", "missing-dir/x.yaml", "d/f.yaml/below",
                 "d/../d/f.yaml", "d/..", "d", ".", "..", "../outside/g.yaml",
                 "dir-link/f.yaml", "out-link/g.yaml", "dir-link/../d/f.yaml", "loop-a/x.yaml",
                 *links]
    paths = [ws / s for s in spellings] + [tmp_path / "ws-link" / s for s in spellings] + [
        Path("/"), tmp_path / "outside" / "g.yaml", tmp_path, *map(Path, spellings)]
    monkeypatch.chdir(ws)  # for the relative spellings
    for root in (ws, tmp_path / "ws-link", tmp_path / "outside", Path("/"), Path("d")):
        resolver = PathResolver(root)
        for path in paths:
            expected = (resolved_path(path), display_path(path, root))
            assert (resolver.resolve(path), resolver.display(path)) == expected, (root, path)
            if expected[0] is None:  # only a path in a loop of symbolic links resolves to none
                with pytest.raises((RuntimeError, OSError)):
                    path.resolve()
                assert expected[1] == path.as_posix()  # shown as given
            else:
                assert expected[0] == path.resolve()


def test_a_config_path_in_a_symlink_loop_is_that_files_problem(tmp_path: Path) -> None:
    """A path running into a loop of symbolic links names no file: it is reported as that
    file's problem (exit 2), never a traceback, and the other configs are still planned."""
    ws = tmp_path / "ws"
    write(ws / "pipelines" / "a.yaml", CONFIG)
    (ws / "pipelines" / "l1").symlink_to("l2")
    (ws / "pipelines" / "l2").symlink_to("l1")
    code, out, err = cli(ws, "plan", "pipelines", "pipelines/l1/x.yaml", "pipelines/l2",
                         "--format", "json", "--output", "plan.json")
    assert code == 2, err
    assert "unexpected error" not in err
    for name in ("pipelines/l1/x.yaml", "pipelines/l2"):
        assert f"{ws / name}: cannot read: Too many levels of symbolic links" in err
    document = json.loads((ws / "plan.json").read_text(encoding="utf-8"))
    assert json.loads(out) == document
    exports = {c["path"]: len(c["exports"]) for c in document["configs"]}
    assert exports == {"pipelines/a.yaml": CONFIG.count("- name:"),  # shown as given:
                       f"{ws}/pipelines/l1/x.yaml": 0, f"{ws}/pipelines/l2": 0}  # no file


def test_a_symlink_loop_met_anywhere_else_is_a_usage_error() -> None:
    """Elsewhere (a `url_file`, a state database) Python 3.11's `Path.resolve` raises a
    RuntimeError for a loop: the command line turns it into the path's error, exit 2."""
    from rivet_ci.cli import _symlink_loop, describe_os_error

    def resolve_in_a_loop() -> None:
        try:
            raise OSError(40, "Too many levels of symbolic links", "/ws/loop")
        except OSError:
            raise RuntimeError("Symlink loop from '/ws/loop'") from None

    with pytest.raises(RuntimeError) as raised:
        resolve_in_a_loop()
    loop = _symlink_loop(raised.value)
    assert loop is not None
    assert describe_os_error(loop) == "too many levels of symbolic links: /ws/loop"
    assert _symlink_loop(RuntimeError("something else")) is None
