# lit configuration for qaccel's FileCheck tests: `lit tests/filecheck`.
import os

import lit.formats

config.name = "qaccel"
config.test_format = lit.formats.ShTest()
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.excludes = ["lit.cfg.py", "Inputs"]

# The tools come from the environment qaccel is installed in.
config.environment["PATH"] = os.environ.get("PATH", "")
for var in ("HOME", "TMPDIR", "PYTHONPATH", "VIRTUAL_ENV"):
    if var in os.environ:
        config.environment[var] = os.environ[var]

fixtures = os.path.join(os.path.dirname(os.path.dirname(__file__)), "fixtures", "models")
config.substitutions.append(("%fixtures", fixtures))

# qaccel-opt with the pass manager tests' test-only passes: `python` runs the script, unless a
# server below runs it.
OPT_WITH_TEST_PASSES = os.path.join(os.path.dirname(__file__), "tools", "Inputs",
                                    "opt_with_test_passes.py")


def _start_tool_servers() -> bool:
    """Each qaccel tool a RUN line starts is a forked copy of a process that already imported
    it (toolserver.py says how and why); QACCEL_LIT_TOOLSERVER=0 starts new processes."""
    import atexit
    import importlib.util
    import shutil
    import subprocess
    import tempfile

    if os.environ.get("QACCEL_LIT_TOOLSERVER", "1") == "0" or not hasattr(os, "pidfd_open"):
        return False
    here = os.path.dirname(__file__)
    spec = importlib.util.spec_from_file_location("toolserver", os.path.join(here, "toolserver.py"))
    toolserver = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(toolserver)

    run_dir = tempfile.mkdtemp(prefix="qaccel-lit-")
    bin_dir = os.path.join(run_dir, "bin")
    servers, python = {}, None
    for tool in ("qaccel-opt", "qaccel-compile", "qaccel-run", "qaccel-sim", "filecheck"):
        real = shutil.which(tool, path=config.environment["PATH"])
        if real is None:
            continue
        with open(real) as f:
            line = f.readline()
        if not line.startswith("#!") or len(line.split()) != 1:
            continue
        servers[tool] = (os.path.join(run_dir, f"{tool}.sock"), real, line[2:].strip())
        python = python or servers[tool][2]
    if not servers:
        return False
    # The test-only qaccel-opt script, served as the console scripts are (it imports what
    # qaccel-opt does); its client runs it with the environment's python when not served.
    python_on_path = shutil.which("python", path=config.environment["PATH"])
    if "qaccel-opt" in servers and python_on_path:
        sock = os.path.join(run_dir, "opt-with-test-passes.sock")
        servers["opt-with-test-passes"] = (sock, OPT_WITH_TEST_PASSES, python_on_path)
    clients = {t: s[:2] for t, s in servers.items()}
    if "opt-with-test-passes" in servers:
        clients["opt-with-test-passes"] = servers["opt-with-test-passes"]
    toolserver.write_clients(bin_dir, python, clients)
    config.environment["PATH"] = bin_dir + os.pathsep + config.environment["PATH"]
    log = open(os.environ.get("QACCEL_TOOLSERVER_DEBUG") or os.devnull, "a")
    server = os.path.join(here, "toolserver.py")
    procs = [subprocess.Popen([interpreter, server, "serve", sock, real],
                              env=dict(config.environment), stdin=subprocess.DEVNULL, stdout=log,
                              stderr=log, cwd=run_dir)
             for sock, real, interpreter in servers.values()]  # fmt: skip

    def stop() -> None:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait()
        shutil.rmtree(run_dir, ignore_errors=True)

    atexit.register(stop)
    return "opt-with-test-passes" in servers


served = _start_tool_servers()
config.substitutions.append(("%opt_with_test_passes", "opt-with-test-passes" if served
                             else f"python {OPT_WITH_TEST_PASSES}"))
