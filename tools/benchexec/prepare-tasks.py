#!/usr/bin/env python3
"""Prepares the SV-COMP tasks of ../shared/bench/sv for BenchExec.

The task-definition files there name property files (termination, overflow, coverage, ...)
that the folder does not hold; BenchExec refuses a task whose property-file pattern matches
no file. This script builds `tools/benchexec/tasks/` (or DEST): one real folder per category
with a symbolic link to every file of the original folder, and `tasks/properties/` with the
unreach-call property copied and the other properties written out (cpals's tool-info module
refuses to verify them; they are there only so that the task definitions load).

Usage: prepare-tasks.py [SOURCE [DEST]]   (defaults: ../shared/bench/sv, tools/benchexec/tasks,
relative to the repository root)
"""
import os
import shutil
import sys

# The SV-COMP property texts the task definitions refer to, besides unreach-call.
OTHER_PROPERTIES = {
    "termination.prp": "CHECK( init(main()), LTL(F end) )\n",
    "no-overflow.prp": "CHECK( init(main()), LTL(G ! overflow) )\n",
    "valid-memsafety.prp": "CHECK( init(main()), LTL(G valid-free) )\n"
    "CHECK( init(main()), LTL(G valid-deref) )\n"
    "CHECK( init(main()), LTL(G valid-memtrack) )\n",
    "coverage-branches.prp": "COVER( init(main()), FQL(COVER EDGES(@DECISIONEDGE)) )\n",
    "coverage-conditions.prp": "COVER( init(main()), FQL(COVER EDGES(@CONDITIONEDGE)) )\n",
    "coverage-statements.prp": "COVER( init(main()), FQL(COVER EDGES(@BASICBLOCKENTRY)) )\n",
    "coverage-error-call.prp": "COVER( init(main()), FQL(COVER EDGES(@CALL(reach_error))) )\n",
}


def main(argv):
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    source = os.path.abspath(argv[0]) if argv else os.path.join(root, "..", "shared", "bench", "sv")
    dest = os.path.abspath(argv[1]) if len(argv) > 1 else os.path.join(root, "tools", "benchexec", "tasks")
    if not os.path.isfile(os.path.join(source, "INDEX.tsv")):
        print(f"prepare-tasks: {source} has no INDEX.tsv", file=sys.stderr)
        return 2
    if os.path.isdir(dest):
        shutil.rmtree(dest)
    os.makedirs(os.path.join(dest, "properties"))
    tasks = 0
    for category in sorted(os.listdir(source)):
        folder = os.path.join(source, category)
        if not os.path.isdir(folder) or category in ("properties", "LICENSES"):
            continue
        os.makedirs(os.path.join(dest, category))
        for name in sorted(os.listdir(folder)):
            os.symlink(os.path.join(folder, name), os.path.join(dest, category, name))
            tasks += name.endswith(".yml")
    shutil.copy(os.path.join(source, "properties", "unreach-call.prp"), os.path.join(dest, "properties"))
    for name, text in OTHER_PROPERTIES.items():
        with open(os.path.join(dest, "properties", name), "w", encoding="utf-8") as f:
            f.write(text)
    print(f"prepare-tasks: {tasks} tasks in {dest}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
