"""The commit and commit date of a folder's git work tree, read with git itself.

`version = "git"` and `effective_from = "git"` in a rules file: the folder's
HEAD commit (40 hex digits) and its committer date (`YYYY-MM-DD`, as `git log`
shows it). A folder with uncommitted changes is refused: the commit would not
describe the text that is stored.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass

from ledger.core.errors import InputError


@dataclass(frozen=True, slots=True)
class GitCommit:
    commit: str
    date: str


def _git(folder: str, *args: str) -> str:
    git = shutil.which("git")
    if git is None:
        raise InputError(
            f'{folder}: the rules say "git" but git is not installed; install it or give '
            "the source_version and effective_from"
        )
    proc = subprocess.run(
        [git, "-C", folder, *args], capture_output=True, text=True, timeout=60, check=False
    )
    if proc.returncode != 0:
        first = (proc.stderr.strip().splitlines() or ["git failed"])[0]
        raise InputError(
            f"{folder}: not readable as a git work tree ({first}); commit it, or give "
            "the source_version and effective_from"
        )
    return proc.stdout


def folder_commit(folder: str) -> GitCommit:
    """HEAD of the work tree holding `folder`, refused when the folder has changes."""
    commit = _git(folder, "rev-parse", "--verify", "HEAD").strip()
    status = _git(folder, "status", "--porcelain", "--untracked-files=normal", "--", ".")
    if status.strip():
        changed = status.strip().splitlines()[0][3:]
        raise InputError(
            f"{folder}: has uncommitted changes (e.g. {changed}); commit them, or give "
            "the source_version and effective_from of this run"
        )
    day = _git(folder, "log", "-1", "--format=%cs", "HEAD").strip()
    return GitCommit(commit, day)
