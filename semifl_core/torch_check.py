"""Whether torch and torchvision load together, and the repair `make install` tries when they do not.

A torchvision built for another torch (e.g. torch's CPU wheel beside torchvision's CUDA wheel) fails with "operator
torchvision::nms does not exist". Only downloading a dataset needs torchvision (training and the tests read the files),
so the install repairs what it can and otherwise names, in one line, the two versions and the command that fixes it.

    python -m semifl_core.torch_check            # exit 0 when they load together, else 1 and one line
    python -m semifl_core.torch_check --repair   # first reinstall torchvision from torch's own build family
"""
from __future__ import annotations

import subprocess
import sys
from importlib import metadata

CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def versions() -> tuple[str, str]:
    """(torch's version, torchvision's version) as installed, '-' for one that is missing."""
    out = []
    for name in ("torch", "torchvision"):
        try:
            out.append(metadata.version(name))
        except metadata.PackageNotFoundError:
            out.append("-")
    return out[0], out[1]


def problem() -> str | None:
    """None when `import torchvision.ops` works (tried in a fresh interpreter: a failed import leaves half-registered
    operators behind); else one line naming both versions and the fix."""
    run = subprocess.run([sys.executable, "-c", "import torchvision.ops"], capture_output=True, text=True)
    if run.returncode == 0:
        return None
    torch_v, vision_v = versions()
    last = (run.stderr.strip().splitlines() or ["unknown error"])[-1]
    fix = fix_command(torch_v, vision_v)
    return (f"torch {torch_v} and torchvision {vision_v} do not load together ({last}); training and the tests do not "
            f"need torchvision, downloading a dataset does: {fix}")


def fix_command(torch_v: str, vision_v: str) -> str:
    """The pip command that puts a torchvision of torch's own build family beside it."""
    local = torch_v.partition("+")[2]
    if vision_v == "-":
        return "pip install torchvision (the release paired with your torch)"
    pin = f"pip install --force-reinstall --no-deps torchvision=={vision_v.partition('+')[0]}"
    return f"{pin} --index-url {CPU_INDEX}" if local == "cpu" else f"{pin} (the build for torch {torch_v})"


def repair() -> bool:
    """Reinstall torchvision from torch's CPU index when torch is a CPU build; True when they then load together."""
    torch_v, vision_v = versions()
    if "+cpu" not in torch_v or vision_v == "-":
        return False
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--retries", "1", "--force-reinstall", "--no-deps",
                    f"torchvision=={vision_v.partition('+')[0]}", "--index-url", CPU_INDEX],
                   capture_output=True, text=True)
    return problem() is None


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    why = problem()
    if why is None:
        return 0
    if "--repair" in argv and repair():
        print("torchvision reinstalled from torch's CPU index: torch and torchvision now load together")
        return 0
    print(f"semifl: {why}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
