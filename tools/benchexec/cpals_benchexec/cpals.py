"""BenchExec tool-info module for cpals (`cpals check`).

Use it with `tool="cpals_benchexec.cpals"` in a benchmark definition and this folder's
parent (`tools/benchexec`) on PYTHONPATH. It supports the reachability properties
(SV-COMP's `unreach-call`, CPAchecker's `unreach-label`) and passes the task's property file
(`--property FILE.prp`, so that only that property counts), the task's data model
(`--data-model ILP32|LP64`; ILP32 when the task names none, as CPAchecker assumes) and,
unless the benchmark definition sets `--timeout` itself, the CPU-time limit as cpals's own
time limit. The result is read from the last line cpals prints, `Verification result: ...`.
"""

import re

import benchexec.result as result
import benchexec.tools.template
from benchexec.tools.template import UnsupportedFeatureException


class Tool(benchexec.tools.template.BaseTool2):
    """cpals: verifies C programs with CPAchecker's algorithms (CPA, CEGAR, explicit values,
    predicate abstraction); one binary is a batch verifier and a language server."""

    def executable(self, tool_locator):
        return tool_locator.find_executable("cpals")

    def name(self):
        return "cpals"

    def version(self, executable):
        # `cpals --version` prints "cpals 0.1.0".
        return self._version_from_tool(executable).replace("cpals", "").strip()

    def cmdline(self, executable, options, task, rlimits):
        args = [executable, "check", *options]
        if task.property_file:
            with open(task.property_file, encoding="utf-8") as f:
                prop = f.read()
            if not re.search(r"G\s*!\s*(call\((reach_error|__VERIFIER_error)\(\)\)|label\(ERROR\))", prop):
                raise UnsupportedFeatureException("cpals supports only the unreach-call and unreach-label properties")
            if "--property" not in options:
                args += ["--property", task.property_file]
        data_model = (task.options or {}).get("data_model") or "ILP32"
        if data_model not in ("ILP32", "LP64"):
            raise UnsupportedFeatureException(f"unsupported data model {data_model}")
        if not any(o == "--data-model" or o.startswith("--data-model=") for o in options):
            args += ["--data-model", data_model]
        if rlimits.cputime and not any(o == "--timeout" or o.startswith("--timeout=") for o in options):
            args += ["--timeout", str(max(1, rlimits.cputime - 2))]
        return [*args, task.single_input_file]

    def determine_result(self, run):
        for line in reversed(run.output):
            m = re.match(r"Verification result: (\S+)", line)
            if not m:
                continue
            verdict = m.group(1)
            if verdict == "TRUE":
                return result.RESULT_TRUE_PROP
            if verdict == "FALSE(unreach-call)":
                return result.RESULT_FALSE_REACH
            if verdict == "FALSE(unreach-label)":
                return result.RESULT_FALSE_PROP
            if verdict == "UNKNOWN":
                return result.RESULT_UNKNOWN
            return result.RESULT_ERROR + f" ({verdict})"
        if run.was_timeout:
            return "TIMEOUT"
        return result.RESULT_ERROR

    def get_value_from_output(self, output, identifier):
        for line in output:
            m = re.search(identifier, line)
            if m and m.groups():
                return m.group(1)
        return None
