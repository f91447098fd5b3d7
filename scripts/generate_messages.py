"""Write the mirror RPC modules in protocol/messages/ from the JSON schemas in protocol/schemas/.

Usage: ``.venv/bin/python scripts/generate_messages.py [--check]``. With ``--check`` nothing is
written and the exit status says whether every module matches its schemas.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from mirrorsim.protocol.message_codegen import generate_module, module_name

ROOT = Path(__file__).resolve().parent.parent
SCHEMAS = ROOT / "protocol" / "schemas"
MESSAGES = ROOT / "protocol" / "messages"


def formatted(source: str) -> str:
    """The project's import order and formatter over generated source, so the modules pass
    ``ruff check`` and ``ruff format`` as every other module does."""
    sorted_imports = _ruff(["check", "--select", "I", "--fix", "--exit-zero", "--quiet"], source)
    return _ruff(["format", "--quiet"], sorted_imports)


def _ruff(arguments: list[str], source: str) -> str:
    command = [sys.executable, "-m", "ruff", *arguments, "--stdin-filename", "message.py", "-"]
    return subprocess.run(
        command, input=source, capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout


def expected_modules() -> dict[Path, str]:
    """Every generated module's path and its source, one per request schema."""
    modules = {}
    for request in sorted(SCHEMAS.glob("*Request.json")):
        response = request.with_name(request.name.replace("Request.json", "Response.json"))
        source = generate_module(request.read_text(), response.read_text())
        modules[MESSAGES / f"{module_name(request.stem)}.py"] = formatted(source)
    return modules


def main(argv: list[str]) -> int:
    check = "--check" in argv
    stale = []
    for path, source in expected_modules().items():
        if path.exists() and path.read_text() == source:
            continue
        stale.append(path)
        if not check:
            path.write_text(source)
    for path in stale:
        print(f"{'differs' if check else 'wrote'}: {path.relative_to(ROOT)}")
    return 1 if check and stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
