"""``stageware policy check``: the resolved middleware per hook point, or the spec's errors.

Most tests run the command line in this process, with the plugins of ``conftest`` on the
path. The last one installs acme-policies into a fresh virtual environment with pip and
runs the command there, in a process of its own, as an operator would.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest

from stageware_codegen.cli import main

from .conftest import PLUGINS, WriteFile, pip_install

ORG = """
version: 1
middleware:
  - use: odd.shout
    band: baseline
  - use: acme.no_weekend_refunds
    band: guardrail
"""

POLICY = """
version: 1
middleware:
  - use: acme.refund_limit
    band: guardrail
    settings: {limit: 300}
    timeout: 500ms
  - use: acme.audit_tools
    fail_mode: closed
  - use: odd.whisper
    band: platform
retry_budgets: {tool.after: 1}
"""

EXPECTED = """\
policy.yaml with the baseline profile org.yaml is valid: 5 middleware installed

tool.before (inbound: outermost band first)
  1.  acme.no_weekend_refunds  guardrail  closed  timeout 2s     org.yaml:5
  2.  acme.refund_limit        guardrail  closed  timeout 500ms  policy.yaml:3
  3.  acme.audit_tools         app        closed  timeout 5s     policy.yaml:7

tool.after (outbound: innermost band first; retry budget 1)
  1.  acme.audit_tools         app        closed  timeout 5s     policy.yaml:7

output.final (outbound: innermost band first)
  1.  odd.shout                baseline   open    no timeout     org.yaml:3

run.end (outbound: innermost band first)
  1.  odd.whisper              platform   open    no timeout     policy.yaml:9
"""


@pytest.fixture
def keep_sys_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """The command puts the working directory on ``sys.path``; undo it after the test."""
    monkeypatch.setattr(sys, "path", list(sys.path))


pytestmark = pytest.mark.usefixtures("plugins", "keep_sys_path")


def test_a_valid_spec_is_listed_per_hook_point_in_execution_order(
    write: WriteFile, capsys: pytest.CaptureFixture[str]
) -> None:
    write("org.yaml", ORG)
    write("policy.yaml", POLICY)

    status = main(["policy", "check", "policy.yaml", "--baseline", "org.yaml"])

    out, err = capsys.readouterr()
    assert (status, err) == (0, "")
    assert out == EXPECTED


def test_an_empty_policy_is_valid(write: WriteFile, capsys: pytest.CaptureFixture[str]) -> None:
    write("policy.yaml", "version: 1\n")

    assert main(["policy", "check", "policy.yaml"]) == 0
    assert capsys.readouterr().out == "policy.yaml is valid: 0 middleware installed\n"


def test_an_invalid_spec_exits_2_with_its_problems_and_no_traceback(
    write: WriteFile, capsys: pytest.CaptureFixture[str]
) -> None:
    write(
        "policy.yaml",
        """
        version: 1
        middleware:
          - use: acme.no_weekend_refunds
            fail_mode: open
          - use: acme.refund_limit
            settings: {limit: -5}
        """,
    )

    status = main(["policy", "check", "policy.yaml"])

    out, err = capsys.readouterr()
    assert (status, out) == (2, "")
    assert err.splitlines() == [
        "policy.yaml:3: middleware[0]: middleware 'acme.no_weekend_refunds' is declared "
        "fail_mode 'closed'; a spec may tighten a fail mode to 'closed', never loosen it to "
        "'open'",
        "policy.yaml:6: middleware 'acme.refund_limit': settings.limit: Input should be greater "
        "than 0",
    ]


def test_module_references_are_found_in_the_working_directory(
    write: WriteFile, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    write(
        "house_rules.py",
        """
        from typing import Any

        from stageware.policy import PolicyEnv, middleware


        @middleware(hooks=["input.received"], fail_mode="closed", timeout=1.5)
        async def polite(event: Any, env: PolicyEnv) -> None:
            '''Checks the input is polite.'''
        """,
    )
    write("policy.yaml", "version: 1\nmiddleware:\n  - use: house_rules:polite\n")
    # As from the `stageware` script: the working directory is not on the path.
    cwd = str(Path.cwd())
    monkeypatch.setattr(sys, "path", [entry for entry in sys.path if entry not in ("", cwd)])

    assert main(["policy", "check", "policy.yaml"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == (
        "  1.  polite  app  closed  timeout 1.5s  policy.yaml:3"
    )


def test_a_character_yaml_refuses_exits_2_with_one_line(
    write: WriteFile, capsys: pytest.CaptureFixture[str]
) -> None:
    write("policy.yaml", "version: 1\nblocked_message: no\fway\n")

    assert main(["policy", "check", "policy.yaml"]) == 2
    assert capsys.readouterr() == (
        "",
        "policy.yaml:2:20: the character U+000C ('\\x0c') is not allowed in YAML; remove it\n",
    )


def test_a_module_that_exits_on_import_is_a_problem_naming_it(write: WriteFile) -> None:
    # sys.exit(0) from a module the spec names used to end the check with status 0 and no
    # word: as if the spec were valid. Run as an operator would, in a process of its own.
    write("house_rules.py", "import sys\n\nsys.exit(0)\n")
    write(
        "policy.yaml",
        "version: 1\nmiddleware:\n  - use: house_rules:polite\n  - use: exits.anything\n",
    )
    script = Path(sysconfig.get_path("scripts")) / "stageware"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}

    done = subprocess.run(
        [str(script), "policy", "check", "policy.yaml"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=120,
    )

    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.splitlines() == [
        "policy.yaml:3: middleware[0].use: importing 'house_rules' failed: it called "
        "sys.exit(0), which loading a policy does not allow",
        "policy.yaml:4: middleware[1].use: plugin entry point 'exits = odd_policies.exits' of "
        "odd-policies 0.3.0: cannot be loaded: it called sys.exit(3), which loading a policy "
        "does not allow",
    ]


def test_a_missing_file_exits_2_naming_it(
    write: WriteFile, capsys: pytest.CaptureFixture[str]
) -> None:
    write("org.yaml", "version: 1\n")

    assert main(["policy", "check", "missing.yaml", "--baseline", "org.yaml"]) == 2
    assert capsys.readouterr().err == (
        "stageware policy check: missing.yaml: No such file or directory\n"
    )


def test_check_runs_in_a_fresh_environment_with_the_plugin_installed_by_pip(
    tmp_path: Path,
) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    # stageware and its dependencies come from this environment; the plugin is installed
    # into the new one, so only its metadata there can make `acme` known.
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    this_site = sysconfig.get_path("purelib")
    line = f"import site; site.addsitedir({this_site!r})\n"
    (Path(site) / "stageware_dev_environment.pth").write_text(line, encoding="utf-8")
    pip_install(PLUGINS / "acme_policies", python=python)
    work = tmp_path / "project"
    work.mkdir()
    (work / "policy.yaml").write_text(
        textwrap.dedent(
            """
            version: 1
            middleware:
              - use: acme.refund_limit
                settings: {limit: 100}
            """
        ).lstrip(),
        encoding="utf-8",
    )
    (work / "broken.yaml").write_text("version: 1\nmiddleware:\n  - use: acme.nope\n")

    def check(spec: str) -> subprocess.CompletedProcess[str]:
        argv = [str(python), "-m", "stageware_codegen.cli", "policy", "check", spec]
        return subprocess.run(argv, cwd=work, capture_output=True, text=True, check=False)

    valid = check("policy.yaml")
    invalid = check("broken.yaml")

    assert valid.returncode == 0, valid.stderr
    assert valid.stdout.splitlines()[-1] == (
        "  1.  acme.refund_limit  app  closed  timeout 1s  policy.yaml:3"
    )
    assert invalid.returncode == 2
    assert invalid.stdout == ""
    assert invalid.stderr.startswith("broken.yaml:3: middleware[0].use: no middleware 'acme.nope'")
    assert "Traceback" not in invalid.stderr
