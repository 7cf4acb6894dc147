"""BenchExec integration of cpals: the tool-info module `cpals_benchexec.cpals`."""
