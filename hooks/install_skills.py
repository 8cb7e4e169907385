"""deja's skills, installed where each agent reads skills, and taken away
again by `deja uninstall`: ``/recover`` (``skills/recover/SKILL.md``: continue
a crashed session) and ``deja`` (``skills/deja/SKILL.md``: when and how to ask
deja, the usage guidance in the form agents load on demand; `--no-guidance`
leaves it out, as it does the usage block of hooks/install_guidance.py).

A copy deja wrote is stamped with its hash: an up-to-date copy is not
rewritten, a copy the user edited is set aside rather than overwritten, and
uninstall removes only deja's own copy and the folders it made for it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping

from deja.stages.recover.base import RecoverError

SKILL_NAME = "recover"
USAGE_SKILL = "deja"
SKILLS = (SKILL_NAME, USAGE_SKILL)
STAMP_NAME = ".deja-installed"  # beside SKILL.md: the hash of the copy deja wrote, then the folders it made


def skill_source(name: str = SKILL_NAME) -> Path:
    return Path(__file__).resolve().parent / "skills" / name / "SKILL.md"


def skill_targets(home: Path, env: Mapping[str, str] | None = None, name: str = SKILL_NAME) -> dict[str, Path]:
    """Where each agent that has skills reads a user-level skill of this name."""
    env = os.environ if env is None else env
    claude = Path(env["CLAUDE_CONFIG_DIR"]) if env.get("CLAUDE_CONFIG_DIR") else home / ".claude"
    return {
        "claude": claude / "skills" / name / "SKILL.md",
        # Codex's user-level skills (its custom prompts, ~/.codex/prompts, are deprecated)
        "codex": home / ".agents" / "skills" / name / "SKILL.md",
    }


def _stamp(dest: Path) -> tuple[str, list[str]]:
    """(hash of deja's copy, folders deja created for it) from the stamp beside ``dest``."""
    stamp = dest.with_name(STAMP_NAME)
    lines = stamp.read_text(encoding="utf-8").splitlines() if stamp.is_file() else []
    return (lines[0].strip() if lines else ""), [x for x in lines[1:] if x.strip()]


def install_skills(home: Path, targets=None, env: Mapping[str, str] | None = None,
                   skills=(SKILL_NAME,)) -> list[Path]:
    """Install ``skills`` for ``targets`` (default: every agent in
    ``skill_targets``); return the files written. Idempotent: an up-to-date copy
    is left alone, and a copy the user changed is kept as ``SKILL.md.bak`` (or
    ``.bak.N``) before it is replaced."""
    import hashlib

    written: list[Path] = []
    for skill in skills:
        want = skill_source(skill).read_bytes()
        all_targets = skill_targets(Path(home), env, skill)
        names = list(all_targets) if targets is None else list(targets)
        for name in names:
            if name not in all_targets:
                raise RecoverError(f"no skill location known for {name!r} (known: {', '.join(all_targets)})")
            dest = all_targets[name]
            have = dest.read_bytes() if dest.is_file() else None
            if have == want:
                continue
            digest, made = _stamp(dest)
            if have is not None and digest != hashlib.sha256(have).hexdigest():
                _keep_user_copy(dest)  # the user edited it (or wrote their own): keep their copy
            missing = [d for d in [dest.parent, *dest.parent.parents] if not d.exists()]
            made += [str(d) for d in reversed(missing)]
            dest.parent.mkdir(parents=True, exist_ok=True)
            tmp = dest.with_name(dest.name + ".tmp")
            tmp.write_bytes(want)
            os.replace(tmp, dest)
            dest.with_name(STAMP_NAME).write_text("\n".join([hashlib.sha256(want).hexdigest(), *made]) + "\n")
            written.append(dest)
    return written


def remove_skills(home: Path, targets, env: Mapping[str, str] | None = None, skills=SKILLS) -> list[str]:
    """Undo ``install_skills`` for ``targets``: remove deja's copy (one the user
    edited stays), put back the user's copy it set aside, and remove the
    folders it made once they are empty. Returns what it did, one line each."""
    import hashlib

    notes = []
    folders: set[str] = set()
    for skill in skills:
        all_targets = skill_targets(Path(home), env, skill)
        for name in targets:
            dest = all_targets.get(name)
            if dest is None or not dest.with_name(STAMP_NAME).is_file():
                continue  # deja did not install this one
            digest, made = _stamp(dest)
            if dest.is_file() and hashlib.sha256(dest.read_bytes()).hexdigest() == digest:
                dest.unlink()
                notes.append(f"removed the /{skill} skill at {dest}")
            elif dest.is_file():
                notes.append(f"kept {dest}: it was edited after deja installed it")
            dest.with_name(STAMP_NAME).unlink()
            if not dest.exists():
                baks = sorted(dest.parent.glob(dest.name + ".bak*"),
                              key=lambda p: int(p.name.rsplit(".", 1)[1]) if p.name[-1].isdigit() else 0)
                if baks:
                    os.replace(baks[-1], dest)
                    notes.append(f"put back your own {dest} (deja had kept it as {baks[-1].name})")
            folders.update(made)
    # the folders deja made, once empty: after every skill is out (two skills share a parent)
    for d in sorted(folders, key=len, reverse=True):
        try:
            Path(d).rmdir()
        except OSError:
            pass
    return notes


def _keep_user_copy(path: Path) -> Path:
    n = 0
    while True:
        bak = path.with_name(path.name + (".bak" if n == 0 else f".bak.{n}"))
        if not bak.exists():
            os.replace(path, bak)
            return bak
        n += 1
