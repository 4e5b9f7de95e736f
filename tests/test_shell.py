"""brainbox.shell: files, tool identity, action and search terms of real agent commands.

Most commands below are copied from the development trajectories (mini-swe-agent, Claude
Code, SWE-agent, OpenHands); the expected answers are written out by hand.
"""

import json
import random
from pathlib import Path

import pytest

from brainbox import shell
from brainbox.shell import (
    command_action,
    command_files,
    command_terms,
    command_tool,
    cwd_after,
    describe,
    python_files,
    split_commands,
)

R, E, C, X = "read", "edit", "create", "run"

# (command, cwd, expected files)
FILES = [
    # readers
    (
        "cat astropy/modeling/separable.py",
        "/testbed",
        [("/testbed/astropy/modeling/separable.py", R)],
    ),
    (
        "nl -ba sklearn/model_selection/_search.py | sed -n '412,430p'",
        "/testbed",
        [("/testbed/sklearn/model_selection/_search.py", R)],
    ),
    ("sed -n '1,80p' sympy/printing/latex.py", None, [("sympy/printing/latex.py", R)]),
    ("head -20 setup.py; tail -n 5 README.rst", "/t", [("/t/setup.py", R), ("/t/README.rst", R)]),
    ("head -n 50 xarray/core/rolling.py", "/t", [("/t/xarray/core/rolling.py", R)]),
    ("awk 'NR>=10 && NR<=20' sympy/core/expr.py", "/t", [("/t/sympy/core/expr.py", R)]),
    ("cat pylint/config/argument.py", None, [("pylint/config/argument.py", R)]),
    # grep / rg
    (
        'grep -n "def factor_list" sympy/polys/polytools.py',
        "/t",
        [("/t/sympy/polys/polytools.py", R)],
    ),
    ('grep -r "class AtomicExpr" sympy/core/expr.py', "/t", [("/t/sympy/core/expr.py", R)]),
    ('grep -rn "def foo" sympy/ --include=*.py', "/t", []),
    ('grep -rn "_print_Trace" sympy/printing', "/t", []),
    ("grep -e foo -e bar a.py b.py", None, [("a.py", R), ("b.py", R)]),
    ("rg -n 'separability_matrix' astropy", None, []),
    (
        "rg -n 'separability_matrix' astropy/modeling/separable.py",
        None,
        [("astropy/modeling/separable.py", R)],
    ),
    (
        "git grep -n 'def where' xarray/core/duck_array_ops.py",
        None,
        [("xarray/core/duck_array_ops.py", R)],
    ),
    # sed -i and friends
    (
        "sed -i 's/cright\\[-right.shape\\[0\\]:, -right.shape\\[1\\]:\\] = 1/= right/' astropy/modeling/separable.py",
        "/testbed",
        [("/testbed/astropy/modeling/separable.py", E)],
    ),
    (
        "sed -i '366,380d' sphinx/directives/other.py && sed -i '366r new_include_class.py' sphinx/directives/other.py",
        "/testbed",
        [("/testbed/sphinx/directives/other.py", E)],
    ),
    ("sed -i.bak -e 's/a/b/' x.py", None, [("x.py", E)]),
    ("sed -i '' 's/a/b/' f.py", None, [("f.py", E)]),
    ("sed -n '1,10p' a.py > b.py", None, [("a.py", R), ("b.py", C)]),
    (
        "sed -i '93a\\\n\\\n    warm_start : bool\\\n' sklearn/ensemble/iforest.py",
        "/testbed",
        [("/testbed/sklearn/ensemble/iforest.py", E)],
    ),
    # heredocs and redirections
    (
        "cat <<'EOF' > reproduce_issue.py\nfrom astropy.modeling import models as m\nprint('a > b.py')\nEOF",
        "/testbed",
        [("/testbed/reproduce_issue.py", C)],
    ),
    ("cat > /tmp/test_fix.py << 'EOF'\nimport os\nEOF", "/testbed", [("/tmp/test_fix.py", C)]),
    (
        "cat <<EOF >> astropy/modeling/tests/test_separable.py\n\ndef test_x():\n    pass\nEOF",
        "/testbed",
        [("/testbed/astropy/modeling/tests/test_separable.py", E)],
    ),
    ("echo 'x = 1' > conf.py && echo done", "/w", [("/w/conf.py", C)]),
    ("echo 'x = 1' >> conf.py", "/w", [("/w/conf.py", E)]),
    ("printf 'a\\nb\\n' | tee out/notes.txt", None, [("out/notes.txt", C)]),
    ("echo x | tee -a out/notes.txt", None, [("out/notes.txt", E)]),
    ("python x.py > /dev/null 2>&1", None, [("x.py", X)]),
    ("python reproduce.py 2>/dev/null | head -5", None, [("reproduce.py", X)]),
    (
        "patch -p1 <<'EOF'\n--- a/x/y.py\n+++ b/x/y.py\n@@ -1 +1 @@\n-a\n+b\nEOF",
        "/w",
        [("/w/x/y.py", E)],
    ),
    ("python3 - <<'PY'\nopen('pkg/a.py', 'w').write('x')\nPY", "/t", [("/t/pkg/a.py", C)]),
    # python and tests: running a script or a test file is a run, not a read
    ("python reproduce_issue.py", "/testbed", [("/testbed/reproduce_issue.py", X)]),
    ("timeout 60 /usr/bin/python3.9 -u x.py", None, [("x.py", X)]),
    (
        "python -m pytest sympy/physics/tests/test_secondquant.py::test_x -xvs 2>&1 | head -100",
        "/testbed",
        [("/testbed/sympy/physics/tests/test_secondquant.py", X)],
    ),
    (
        "pytest astropy/modeling/tests/test_separable.py -k nested",
        "/testbed",
        [("/testbed/astropy/modeling/tests/test_separable.py", X)],
    ),
    (
        "bin/test sympy/geometry/tests/test_point.py",
        "/testbed",
        [("/testbed/sympy/geometry/tests/test_point.py", X)],
    ),
    (
        "python bin/test sympy/core/tests/test_evalf.py",
        "/testbed",
        [("/testbed/bin/test", X), ("/testbed/sympy/core/tests/test_evalf.py", X)],
    ),
    # test labels are not files (a dotted name has no slash and no source extension)
    (
        "python tests/runtests.py admin_views.tests.AdminViewBasicTest.test_x --settings=s",
        "/w",
        [("/w/tests/runtests.py", X)],
    ),
    ("./tests/runtests.py admin_views.tests", "/w", [("/w/tests/runtests.py", X)]),
    ("python -m unittest tests.test_requests.RequestsTestCase", "/w", []),
    ("python -m pytest --pyargs pkg.sub.mod tests/test_a.py", "/w", [("/w/tests/test_a.py", X)]),
    ("pytest test_a.py tests.test_b", "/w", [("/w/test_a.py", X)]),
    ("bin/test sympy.core.tests sympy/core/tests/test_b.py", "/w",
     [("/w/sympy/core/tests/test_b.py", X)]),
    ('python3 -c "import sympy; print(sympy.__version__)"', "/testbed", []),
    (
        "python3 -c 'lines = open(\"xarray/core/computation.py\").readlines()'",
        "/testbed",
        [("/testbed/xarray/core/computation.py", R)],
    ),
    (
        "javac reproduce.java && java Reproduce",
        "/fasterxml__jackson-databind",
        [("/fasterxml__jackson-databind/reproduce.java", R)],
    ),
    ("./run_reproduce.sh", "/w", [("/w/run_reproduce.sh", X)]),
    ("bash run.sh && sh -x ci/check.sh", "/w", [("/w/run.sh", X), ("/w/ci/check.sh", X)]),
    ("source env/setup.sh && . ./vars.sh", "/w", [("/w/env/setup.sh", X), ("/w/vars.sh", X)]),
    # cd handling
    (
        "cd testbed && sed -i 's/a/b/' pkg/mod.py && cat pkg/mod.py",
        "/w",
        [("/w/testbed/pkg/mod.py", E), ("/w/testbed/pkg/mod.py", R)],
    ),
    (
        "cd /testbed && grep -n 'Structured ndarray' astropy/table/table.py",
        "/workspace",
        [("/testbed/astropy/table/table.py", R)],
    ),
    ("cd sub && cat a.py", None, [("sub/a.py", R)]),
    ("(cd testbed && pytest tests/test_a.py)", "/w", [("/w/testbed/tests/test_a.py", X)]),
    ("cd $HOME && cat a.py", "/w", [("/w/a.py", R)]),
    # git
    (
        "git show 074da7d930:sympy/core/basic.py | sed -n '503,515p'",
        "/t",
        [("/t/sympy/core/basic.py", R)],
    ),
    ("git diff HEAD~1 -- sympy/core/add.py", None, [("sympy/core/add.py", R)]),
    ("git diff --cached src/", None, []),
    ("git -C ./swebench_9_15/testbed diff --cached", None, []),
    ("git -C testbed diff sympy/core/add.py", "/w", [("/w/testbed/sympy/core/add.py", R)]),
    ("git checkout -- setup.py && git diff", None, [("setup.py", E)]),
    ("git checkout pyproject.toml", None, [("pyproject.toml", E)]),
    ("git checkout 74227f900b05009d4eed62e34a166228788a32ca", None, []),
    ("git clone https://github.com/astropy/astropy.git testbed", None, []),
    # copies, moves, deletions
    (
        "cp sympy/core/add.py sympy/core/add.py.bak",
        None,
        [("sympy/core/add.py", R), ("sympy/core/add.py.bak", C)],
    ),
    (
        "mv ArrayIssueTest.java src/test/java/arrayissue/",
        None,
        [("ArrayIssueTest.java", R), ("src/test/java/arrayissue/ArrayIssueTest.java", C)],
    ),
    ("install -m 644 conf/a.ini /w/etc/a.ini", None, [("conf/a.ini", R), ("/w/etc/a.ini", C)]),
    (
        "rm reproduce_issue.py update_cds.py tab.txt",
        "/testbed",
        [
            ("/testbed/reproduce_issue.py", E),
            ("/testbed/update_cds.py", E),
            ("/testbed/tab.txt", E),
        ],
    ),
    ("rm -rf reproduction/docs/_build", None, []),
    ("rm -rf testbed", None, []),
    ("touch src/__init__.py", None, [("src/__init__.py", C)]),
    ("truncate -s 0 log.txt", None, [("log.txt", E)]),
    ("sed -i '1i line' AUTHORS", None, [("AUTHORS", E)]),
    # no files
    ("ls -la sympy/core/", None, []),
    ('find . -name "*.py" | xargs grep -l "class Permutation" 2>/dev/null | head -10', None, []),
    ("pip install -e .", None, []),
    ("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached", None, []),
    ("for f in a.py b.py; do cat $f; done", None, []),
    ("vim a.py", None, []),
    ("wget https://example.com/x.tar.gz", None, []),
]


@pytest.mark.parametrize("command,cwd,expected", FILES, ids=[c[:50] for c, _, _ in FILES])
def test_command_files_of_real_commands(command, cwd, expected):
    assert command_files(command, cwd) == expected


TOOLS = [
    ("python reproduce.py", "Bash:python"),
    ("python3 reproduce_issue.py", "Bash:python"),
    ("/usr/bin/python3 -m pytest sympy/core/tests/test_evalf.py", "Bash:pytest"),
    ("python -m pytest -q", "Bash:pytest"),
    ("cd /testbed && timeout 60 python -m pytest tests/x.py -q", "Bash:pytest"),
    ("PYTHONWARNINGS=ignore python3 -m pytest -q", "Bash:pytest"),
    ("python -m sphinx.cmd.build -b html docs out", "Bash:sphinx"),
    ("python -m pip install -e .", "Bash:pip"),
    ("pip3 install pytest", "Bash:pip"),
    ("py.test testing/test_x.py", "Bash:pytest"),
    ("FOO=1 /usr/bin/git diff", "Bash:git"),
    ("git -C testbed diff --cached", "Bash:git"),
    ("sudo apt-get update && sudo apt-get install openjdk-11-jdk -y", "Bash:apt-get"),
    ("sudo -E env X=1 make test", "Bash:make"),
    ("timeout -s KILL 30 pytest", "Bash:pytest"),
    ("time python x.py", "Bash:python"),
    ("nohup python server.py &", "Bash:python"),
    ("export JAVA_HOME=/usr/lib/jvm/java-11-openjdk && ./mvnw test", "Bash:mvnw"),
    (
        "source /opt/miniconda3/etc/profile.d/conda.sh && conda activate testbed && python x.py",
        "Bash:python",
    ),
    ("./gradlew test --tests X", "Bash:gradlew"),
    ("./run_reproduce.sh", "Bash:bash"),
    ("scripts/check.py --fast", "Bash:python"),
    ("bash -c 'cd /tmp && make'", "Bash:make"),
    ("bin/test sympy/geometry/tests/test_point.py", "Bash:test"),
    ("cat <<'EOF' > r.py\nprint(1)\nEOF\npython r.py", "Bash:cat"),
    ("nl -ba a.py | sed -n '1,5p'", "Bash:nl"),
    ("# look around\nls -la", "Bash:ls"),
    ("cd /testbed", "Bash:cd"),
    ("(cd sub && pytest)", "Bash:pytest"),
    ("", "Bash"),
    ("   ", "Bash"),
    ("&& ||", "Bash"),
]


@pytest.mark.parametrize("command,tool", TOOLS, ids=[c[:40] or "empty" for c, _ in TOOLS])
def test_command_tool_names_the_program_that_does_work(command, tool):
    assert command_tool(command) == tool


ACTIONS = [
    ("cat a.py", "read"),
    ("sed -n '1,5p' a.py", "read"),
    ("git diff", "read"),
    ("grep -rn foo .", "search"),
    ("find . -name '*.py'", "search"),
    ("ls -la", "search"),
    ("git grep foo", "search"),
    ("python x.py", "run"),
    ("python -m pytest", "run"),
    ("./gradlew test", "run"),
    ("sed -i 's/a/b/' a.py", "edit"),
    ("cat <<'EOF' > a.py\nx\nEOF", "edit"),
    ("touch a.py", "edit"),
    ("cp a.py b.py", "edit"),
    ("python tests/runtests.py admin_views.tests.Foo", "run"),
    ("bash run.sh", "run"),
    ("source run.sh", "run"),
    ("rm a.py", "edit"),
    ("echo hi", "other"),
    ("pwd", "other"),
    ("", "other"),
]


@pytest.mark.parametrize("command,action", ACTIONS)
def test_command_action(command, action):
    assert command_action(command) == action


def test_command_terms_keep_search_patterns_not_output_filters():
    assert command_terms('grep -rn "def separability_matrix" astropy/') == "def separability_matrix"
    assert command_terms("grep -n foo a.py") == "foo"
    assert command_terms("grep -e foo -e bar a.py") == "foo bar"
    assert command_terms("find . -name '*fitsrec*' -type f") == "*fitsrec*"
    assert command_terms("git grep -n needle") == "needle"
    assert command_terms("python x.py 2>&1 | grep -v Warning") is None
    assert command_terms("cat a.py") is None


def test_describe_reports_heredoc_writes_and_script_runs():
    cmd = "cat <<'EOF' > fix.py\np = 'pkg/mod.py'\nopen(p, 'w').write('x')\nEOF\ncd sub && python3 ../fix.py"
    d = describe(cmd, "/testbed")
    assert d["writes"] == [("/testbed/fix.py", "p = 'pkg/mod.py'\nopen(p, 'w').write('x')")]
    assert d["runs"] == [("/testbed/fix.py", "/testbed/sub")]
    assert d["tool"] == "Bash:cat" and d["action"] == "edit"


def test_a_test_label_is_a_file_only_when_that_path_was_seen():
    cmd = "python tests/runtests.py admin_views.tests.Foo model_forms/test_x.py"
    assert describe(cmd, "/w")["files"] == [
        ("/w/tests/runtests.py", X),
        ("/w/model_forms/test_x.py", X),
    ]
    asked = []

    def seen(path):
        asked.append(path)
        return path == "/w/admin_views.tests.Foo"

    d = describe(cmd, "/w", seen=seen)
    assert d["files"] == [
        ("/w/tests/runtests.py", X),
        ("/w/admin_views.tests.Foo", X),
        ("/w/model_forms/test_x.py", X),
    ]
    assert asked == ["/w/admin_views.tests.Foo"]  # only the label is looked up, resolved
    assert describe("cd sub && pytest a.b.C", "/w", seen=lambda p: p == "/w/sub/a.b.C")[
        "files"
    ] == [("/w/sub/a.b.C", X)]
    assert d["action"] == "run"


def test_python_files_follows_string_variables_and_modes():
    code = (
        "file_path = 'sklearn/linear_model/ridge.py'\n"
        "with open(file_path, 'r') as f:\n    lines = f.readlines()\n"
        "with open(file_path, mode='w') as f:\n    f.writelines(lines)\n"
        "Path('docs/conf.py').write_text('x')\n"
        "open(f'{name}.py')\n"
    )
    assert python_files(code) == [
        ("sklearn/linear_model/ridge.py", "read"),
        ("sklearn/linear_model/ridge.py", "edit"),  # rewrites the file it read
        ("docs/conf.py", "create"),  # a whole-file write of a path it did not read
    ]
    assert python_files("open('log.txt', 'a').write('x'); open('new.py', 'x')") == [
        ("log.txt", "edit"),
        ("new.py", "create"),
    ]


def test_split_commands_respects_quotes_heredocs_and_comments():
    pieces = split_commands(
        "echo 'a && b' && cat <<EOF > f.txt\nx; y | z\nEOF\n# note\nls # trailing"
    )
    assert [t for t, _ in pieces] == ["echo 'a && b'", "cat   > f.txt", "ls"]
    assert pieces[1][1] == ["x; y | z"]


def test_cwd_after_follows_top_level_cd():
    assert cwd_after("cd /testbed && python x.py", "/workspace") == "/testbed"
    assert cwd_after("cd astropy && cd ../docs", "/testbed") == "/testbed/docs"
    assert cwd_after("cd ~ && ls", "/testbed") == "/testbed"
    assert cwd_after("ls", None) is None


WEIRD = [
    "echo 'unbalanced",
    'grep -n "foo',
    "cat <<EOF > f.py\nno end",
    "$(",
    "`",
    "\\",
    "a\\",
    "<<",
    ">",
    ">>",
    "2>&1",
    "| | |",
    "&&&",
    ";;",
    "((",
    "))",
    "$((1<<2))",
    "cd",
    "cd -",
    "sed -i",
    "git",
    "git -C",
    "python -m",
    "python -c",
    "cp",
    "mv a",
    "timeout",
    "sudo",
    "env",
    "xargs",
    "\x00\x01",
    "é ü 中文 > файл.py",
    "a" * 10000,
    "'" * 999,
    '"' * 1001,
    "cat " + "x/" * 500 + "a.py",
    None,
    42,
    b"bytes",
    ["list"],
]


@pytest.mark.parametrize("command", WEIRD, ids=range(len(WEIRD)))
def test_weird_input_never_raises(command):
    assert isinstance(command_files(command, "/w"), list)
    assert command_tool(command).startswith("Bash")
    assert command_action(command) in ("read", "edit", "search", "run", "other")
    command_terms(command)
    d = describe(command, None)
    assert set(d) == {"tool", "files", "action", "terms", "writes", "runs"}


def test_random_garbage_never_raises():
    rng = random.Random(7)
    alphabet = "ab /.'\"\\$`|&;<>()\n\t#-=*?[]{}~:0123456789EOF"
    for _ in range(1500):
        cmd = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60)))
        files = command_files(cmd, "/w")
        assert all(isinstance(p, str) and a in ("read", "edit", "create", "run") for p, a in files)
        command_tool(cmd)


def test_files_are_deduplicated_in_order():
    cmd = "cat a.py && cat a.py b.py && sed -i 's/x/y/' a.py"
    assert command_files(cmd) == [("a.py", R), ("b.py", R), ("a.py", E)]


def test_only_file_like_words_are_returned():
    assert shell.looks_like_file("sympy/core/add.py")
    assert shell.looks_like_file("setup.cfg")
    assert shell.looks_like_file("Makefile")
    assert not shell.looks_like_file("*.py")
    assert not shell.looks_like_file("$FILE")
    assert not shell.looks_like_file("3.9")
    assert not shell.looks_like_file("https://x.org/a.py")
    assert not shell.looks_like_file("/dev/null")
    assert not shell.looks_like_file("--cov=src")


DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "trajectories"


def test_every_real_mini_swe_agent_command_parses_quickly():
    """All 9.8k shell commands of the mini-swe-agent dev set: no exception, and fast."""
    import re
    import time

    folder = DATA / "mini-swe-agent-gemini3-verified" / "trajs"
    if not folder.is_dir():
        pytest.skip("development data not present")
    commands = []
    for p in sorted(folder.glob("*/*.traj.json"))[:120]:
        for m in json.loads(p.read_text())["messages"][2:]:
            if m["role"] == "assistant":
                commands += re.findall(r"```bash\s*\n(.*?)\n```", m["content"], re.DOTALL)
    t = time.perf_counter()
    for c in commands:
        describe(c, "/testbed")
    per_call = (time.perf_counter() - t) / len(commands)
    assert per_call < 0.002  # measured ~0.25 ms
