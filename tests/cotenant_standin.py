"""A stand-in co-tenant for tests (issue 35): a real process with the name of another GPU program (a script named
`ollama`, so the system reports that name), and a stand-in `nvidia-smi` that lists it, with the memory it says it
holds, only while it is alive. The pack runs it through VRAM_BUDGET_NVIDIA_SMI, as it runs the real one."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

SMI = '''#!{python}
import os, sys
STATE = {state!r}
args = " ".join(sys.argv[1:])
held = []
for f in sorted(os.listdir(STATE)):
    pid, mib = int(f), int(open(os.path.join(STATE, f)).read())
    try:
        os.kill(pid, 0)
    except OSError:
        continue
    held.append((pid, mib))
if "--query-gpu" in args:
    print("0, GPU-standin-0, {name}, {total}, %d" % (300 + sum(m for _, m in held)))
elif "--query-compute-apps" in args:
    for pid, mib in held:
        print("GPU-standin-0, %d, %s, %d" % (pid, "ollama", mib))
'''

HOLDER = '''#!{python}
import os, sys, time
open(os.path.join({state!r}, str(os.getpid())), "w").write(sys.argv[1])
time.sleep(600)
'''


def fake_smi(folder: Path, name: str = "NVIDIA GeForce RTX 3060", total_mib: int = 12288) -> Path:
    state = folder / "holders"
    state.mkdir(parents=True, exist_ok=True)
    smi = folder / "nvidia-smi"
    smi.write_text(SMI.format(python=sys.executable, state=str(state), name=name, total=total_mib))
    smi.chmod(0o755)
    return smi


def start_holder(folder: Path, mib: int, name: str = "ollama", extra=("runner", "--model", "/m/blobs/sha256-ab12")):
    """A process named `name` that the stand-in nvidia-smi lists as holding `mib` MiB until it ends."""
    bindir = folder / "bin"
    bindir.mkdir(exist_ok=True)
    script = bindir / name
    script.write_text(HOLDER.format(python=sys.executable, state=str(folder / "holders")))
    script.chmod(0o755)
    proc = subprocess.Popen([str(script), str(mib), *extra])
    deadline = time.time() + 10
    while not (folder / "holders" / str(proc.pid)).exists() and time.time() < deadline:
        time.sleep(0.05)
    return proc


def stop(proc) -> None:
    proc.terminate()
    proc.wait(10)
