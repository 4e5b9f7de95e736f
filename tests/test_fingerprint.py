"""brainbox.fingerprint: normalisation and TYPE|operation fingerprints of real-looking errors."""

import re
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from brainbox import fingerprint as fingerprinter
from brainbox.fingerprint import (
    MAX_NORMALIZED_CHARS,
    UNKNOWN_FINGERPRINT,
    fingerprint,
    normalize_error,
)

FINGERPRINT_SHAPE = re.compile(r"^[A-Z][A-Z0-9_]*\|[a-z0-9][a-z0-9_]*$")

PY_IMPORT_TB = """\
Traceback (most recent call last):
  File "/testbed/reproduce.py", line 3, in <module>
    from sympy.geometry import Point
  File "/testbed/sympy/__init__.py", line 21, in <module>
    import mpmath
ModuleNotFoundError: No module named 'mpmath'
"""

PY_ATTRIBUTE_TB = """\
Traceback (most recent call last):
  File "/testbed/reproduce_issue.py", line 10, in <module>
    print(c.as_relational(x))
          ^^^^^^^^^^^^^^^
AttributeError: 'Contains' object has no attribute 'as_relational'
"""

PYTEST_FAILURE = """\
============================= test session starts ==============================
platform linux -- Python 3.9.19, pytest-7.4.0, pluggy-1.0.0
rootdir: /testbed
collected 3 items

tests/test_point.py .F.                                                  [100%]

=================================== FAILURES ===================================
_________________________________ test_distance ________________________________

    def test_distance():
>       assert Point(0, 0).distance(Point(3, 4)) == 6
E       assert 5 == 6

tests/test_point.py:7: AssertionError
=========================== short test summary info ============================
FAILED tests/test_point.py::test_distance - assert 5 == 6
========================= 1 failed, 2 passed in 0.12s ==========================
"""

PYTEST_COLLECTION_IMPORT = """\
==================================== ERRORS ====================================
_____________________ ERROR collecting tests/test_a.py ______________________
ImportError while importing test module '/repo/tests/test_a.py'.
Hint: make sure your test modules/packages have valid Python names.
Traceback:
tests/test_a.py:1: in <module>
    import foo
E   ModuleNotFoundError: No module named 'foo'
=========================== short test summary info ============================
ERROR tests/test_a.py
!!!!!!!!!!!!!!!!!!!! Interrupted: 1 error during collection !!!!!!!!!!!!!!!!!!!!
=============================== 1 error in 0.05s ===============================
"""

NODE_TYPE_ERROR = """\
/app/src/index.js:14
  const name = user.profile.name;
                            ^

TypeError: Cannot read properties of undefined (reading 'name')
    at getName (/app/src/index.js:14:29)
    at Object.<anonymous> (/app/src/index.js:20:1)
    at Module._compile (node:internal/modules/cjs/loader:1256:14)
    at node:internal/main/run_main_module:23:47

Node.js v18.17.0
"""

JAVAC_ERROR = """\
src/main/java/com/example/App.java:12: error: cannot find symbol
        Foo f = new Foo();
        ^
  symbol:   class Foo
  location: class App
1 error
"""

MVN_COMPILE = """\
[INFO] BUILD FAILURE
[ERROR] COMPILATION ERROR :
[ERROR] /repo/gson/src/main/java/com/google/gson/Gson.java:[123,17] cannot find symbol
  symbol:   variable foo
[ERROR] Failed to execute goal org.apache.maven.plugins:maven-compiler-plugin:3.8.1:compile \
(default-compile) on project gson: Compilation failure
"""

MVN_TEST = """\
[INFO] Running com.fasterxml.jackson.databind.TestFoo
[ERROR] Tests run: 3, Failures: 1, Errors: 0, Skipped: 0, Time elapsed: 0.123 s <<< FAILURE!
[ERROR] testBar(com.fasterxml.jackson.databind.TestFoo)  Time elapsed: 0.01 s  <<< FAILURE!
junit.framework.AssertionFailedError: expected:<1> but was:<2>
\tat com.fasterxml.jackson.databind.TestFoo.testBar(TestFoo.java:42)
[INFO] BUILD FAILURE
[ERROR] Failed to execute goal org.apache.maven.plugins:maven-surefire-plugin:2.22.2:test \
(default-test) on project jackson-databind: There are test failures.
"""

MVN_PLUGIN = """\
[INFO] BUILD FAILURE
[ERROR] Failed to execute goal com.google.cloud.tools:jib-maven-plugin:2.5.0:build (default-cli) \
on project helloworld: Missing target image parameter
"""

JAVA_RUNTIME = """\
Exception in thread "main" com.fasterxml.jackson.databind.exc.InvalidTypeIdException: Could not \
resolve subtype of [simple type, class com.smilep.jackson.LivingBeingType]: missing type id
 at [Source: (String)"{}"; line: 1, column: 2]
\tat com.fasterxml.jackson.databind.exc.InvalidTypeIdException.from(InvalidTypeIdException.java:43)
\tat com.fasterxml.jackson.databind.DeserializationContext.missingTypeIdException(DeserializationContext.java:2083)
\t... 12 more
"""

JAVA_CAUSED_BY = """\
Exception in thread "main" java.lang.RuntimeException: wrapper
\tat Main.main(Main.java:5)
Caused by: java.lang.NullPointerException: Cannot invoke "String.length()" because "s" is null
\tat Main.f(Main.java:9)
\t... 1 more
"""

REAL_LOOKING = [
    (PY_IMPORT_TB, "PYTHON_TRACEBACK|importing"),
    (PY_ATTRIBUTE_TB, "PYTHON_ATTRIBUTE_ERROR|attribute_access"),
    (
        (
            "Traceback (most recent call last):\n  File \"x.py\", line 2, in <module>\n    d['zero']\n"
            "KeyError: 'zero'\n"
        ),
        "PYTHON_KEY_ERROR|key_lookup",
    ),
    (
        '  File "/testbed/reproduce.py", line 3\n    def f(:\n          ^\nSyntaxError: invalid syntax\n',
        "SYNTAX_ERROR|parsing",
    ),
    (
        (
            'Traceback (most recent call last):\n  File "t.py", line 4, in <module>\n    assert f() == 2\n'
            "AssertionError\n"
        ),
        "ASSERTION_ERROR|test_assertion",
    ),
    (
        (
            'Traceback (most recent call last):\n  File "t.py", line 4, in <module>\n    f(1, 2, 3)\n'
            "TypeError: f() takes 2 positional arguments but 3 were given\n"
        ),
        "PYTHON_TYPE_ERROR|call_signature",
    ),
    (
        (
            "Traceback (most recent call last):\n  File \"t.py\", line 1, in <module>\n    open('a')\n"
            "FileNotFoundError: [Errno 2] No such file or directory: 'a'\n"
        ),
        "FILE_NOT_FOUND|file_access",
    ),
    (
        (
            'Traceback (most recent call last):\n  File "t.py", line 2, in <module>\n    f()\n'
            "sympy.polys.polyerrors.PolynomialError: Piecewise generators do not make sense\n"
        ),
        "PYTHON_EXCEPTION|polynomialerror",
    ),
    (PYTEST_FAILURE, "TEST_FAILURE|pytest"),
    (PYTEST_COLLECTION_IMPORT, "PYTHON_TRACEBACK|importing"),
    (
        (
            "ERROR: file or directory not found: tests/test_domain_python.py\n\n"
            "============================= no tests ran in 0.01s =============================\n"
        ),
        "FILE_NOT_FOUND|file_access",
    ),
    (
        (
            "============ tests finished: 10 passed, 1 failed, in 0.50 seconds ============\n"
            "DO *NOT* COMMIT!\n"
        ),
        "TEST_FAILURE|sympy",
    ),
    ("/usr/bin/python3: No module named pytest\n", "PYTHON_TRACEBACK|importing"),
    (NODE_TYPE_ERROR, "TYPE_ERROR|property_access"),
    (
        (
            "/app/x.js:2\nfoo.bar();\n    ^\n\nTypeError: foo.bar is not a function\n"
            "    at Object.<anonymous> (/app/x.js:2:5)\n"
        ),
        "TYPE_ERROR|function_call",
    ),
    ("ReferenceError: x is not defined\n    at /app/x.js:1:1\n", "REFERENCE_ERROR|name_lookup"),
    (
        (
            "Error: Cannot find module 'express'\nRequire stack:\n- /app/index.js\n"
            "    at Module._resolveFilename (node:internal/modules/cjs/loader:1077:15)\n"
        ),
        "MODULE_NOT_FOUND|importing",
    ),
    (
        (
            "src/index.ts(12,5): error TS2345: Argument of type 'string' is not assignable to "
            "parameter of type 'number'.\n"
        ),
        "COMPILE_ERROR|tsc",
    ),
    (
        "FAIL src/sum.test.js\n  ● sum › adds 1 + 2 to equal 3\n\nTests:       1 failed, 1 total\n",
        "TEST_FAILURE|jest",
    ),
    ('npm ERR! Missing script: "test"\nnpm ERR! \n', "COMMAND_NOT_FOUND|npm_script"),
    (JAVAC_ERROR, "COMPILE_ERROR|javac"),
    (MVN_COMPILE, "COMPILE_ERROR|javac"),
    (MVN_TEST, "TEST_FAILURE|junit"),
    (MVN_PLUGIN, "BUILD_ERROR|maven"),
    (
        (
            "[ERROR] Failed to execute goal on project x: Could not resolve dependencies for project "
            "com.x:y:jar:1.0: Could not find artifact com.z:w:jar:2.0 in central\n"
        ),
        "DEPENDENCY_ERROR|maven",
    ),
    (JAVA_RUNTIME, "JAVA_EXCEPTION|invalidtypeidexception"),
    (JAVA_CAUSED_BY, "JAVA_EXCEPTION|nullpointerexception"),
    (
        (
            "error[E0425]: cannot find value `x` in this scope\n --> src/main.rs:2:5\n  |\n2 |     x\n"
            "  |     ^ not found in this scope\n"
        ),
        "COMPILE_ERROR|rustc",
    ),
    (
        "running 1 test\ntest tests::it_works ... FAILED\n\ntest result: FAILED. 0 passed; 1 failed\n",
        "TEST_FAILURE|cargo_test",
    ),
    ("# example.com/foo\n./main.go:5:2: undefined: bar\n", "COMPILE_ERROR|go"),
    ("--- FAIL: TestAdd (0.00s)\n    add_test.go:9: got 3 want 4\nFAIL\n", "TEST_FAILURE|go_test"),
    (
        (
            "panic: runtime error: index out of range [5] with length 3\n\ngoroutine 1 [running]:\n"
            "main.main()\n\t/tmp/x.go:8 +0x1d\nexit status 2\n"
        ),
        "GO_PANIC|index_out_of_range",
    ),
    ("bash: line 1: pytest: command not found\n", "COMMAND_NOT_FOUND|shell"),
    ("zsh: command not found: pyhton\n", "COMMAND_NOT_FOUND|shell"),
    ("sh: 1: ed: not found\n", "COMMAND_NOT_FOUND|shell"),
    (
        (
            "./run_tests.sh: line 4: javac: command not found\n"
            "find: '/root/.m2/repository': No such file or directory\n"
        ),
        "COMMAND_NOT_FOUND|shell",
    ),
    ("bash: ./run.sh: Permission denied\n", "PERMISSION_DENIED|file_access"),
    ("cat: /testbed/foo.txt: No such file or directory\n", "FILE_NOT_FOUND|file_access"),
    ("(eval):cd:1: no such file or directory: testbed\n", "FILE_NOT_FOUND|file_access"),
    ("<tool_use_error>File does not exist.</tool_use_error>", "FILE_NOT_FOUND|file_access"),
    (
        "<tool_use_error>String to replace not found in file.\nString: foo</tool_use_error>",
        "EDIT_ERROR|string_replace",
    ),
    ("grep: sklearn/utils/tests: Is a directory\n", "FILE_ERROR|is_directory"),
    (
        "fatal: not a git repository (or any of the parent directories): .git\n",
        "GIT_ERROR|repository",
    ),
    ("error: pathspec 'fix-bug' did not match any file(s) known to git\n", "GIT_ERROR|revision"),
    (
        (
            "CONFLICT (content): Merge conflict in src/a.py\n"
            "Automatic merge failed; fix conflicts and then commit the result.\n"
        ),
        "GIT_ERROR|merge_conflict",
    ),
    (
        (
            " ! [rejected]        main -> main (fetch first)\n"
            "error: failed to push some refs to 'github.com:x/y.git'\n"
        ),
        "GIT_ERROR|push",
    ),
    (
        "error: patch failed: src/a.py:12\nerror: src/a.py: patch does not apply\n",
        "GIT_ERROR|apply_patch",
    ),
    (
        "The last command <command>pytest -x</command> timed out and has been killed.\n",
        "TIMEOUT|command",
    ),
    (
        "curl: (7) Failed to connect to localhost port 8000 after 0 ms: Connection refused\n",
        "NETWORK_ERROR|connection",
    ),
    ("curl: (6) Could not resolve host: example.invalid\n", "NETWORK_ERROR|dns"),
    (
        (
            "ERROR: Could not find a version that satisfies the requirement foo==9.9 (from versions: "
            "none)\nERROR: No matching distribution found for foo==9.9\n"
        ),
        "DEPENDENCY_ERROR|pip",
    ),
    (
        "usage: pytest [options] [file_or_dir]\npytest: error: unrecognized arguments: --foo\n",
        "USAGE_ERROR|cli_arguments",
    ),
    ("Segmentation fault (core dumped)\n", "CRASH|signal"),
    ("main.c:3:5: error: use of undeclared identifier 'x'\n", "COMPILE_ERROR|gcc"),
    (
        (
            "************* Module reproduce\nreproduce.py:1:0: C0114: Missing module docstring "
            "(missing-module-docstring)\n"
        ),
        "LINT_ERROR|pylint",
    ),
]


@pytest.mark.parametrize(("text", "expected"), REAL_LOOKING, ids=[e for _, e in REAL_LOOKING])
def test_real_looking_messages_map_to_their_fingerprint(text, expected):
    assert fingerprint(text) == expected


def test_python_traceback_is_classified_by_its_final_exception_line():
    chained = (
        "Traceback (most recent call last):\n  File \"a.py\", line 2, in <module>\n    int('x')\n"
        "ValueError: invalid literal for int() with base 10: 'x'\n\n"
        "During handling of the above exception, another exception occurred:\n\n"
        'Traceback (most recent call last):\n  File "a.py", line 4, in <module>\n'
        "    raise KeyError('k')\nKeyError: 'k'\n"
    )
    assert fingerprint(chained) == "PYTHON_KEY_ERROR|key_lookup"
    assert normalize_error(chained) == "KeyError: 'X'"


def test_program_output_interleaved_with_frames_does_not_hide_the_exception():
    text = (
        'Traceback (most recent call last):\n  File "/testbed/check.py", line 5, in <module>\n'
        '    r = i.func(*i.args)\ni: 5\nargs: ()\n  File "/testbed/sympy/core/cache.py", '
        "line 70, in wrapper\n    retval = cfunc(*args, **kwargs)\n"
        "TypeError: __new__() missing 1 required positional argument: 'i'\n"
    )
    assert fingerprint(text) == "PYTHON_TYPE_ERROR|call_signature"


def test_unknown_text_is_generic():
    assert fingerprint("something odd happened here") == UNKNOWN_FINGERPRINT
    assert fingerprint("Exit code 1") == UNKNOWN_FINGERPRINT


# ---------------------------------------------------------------------- normalisation


def test_messages_differing_in_lines_addresses_and_names_normalise_alike():
    a = (
        "Traceback (most recent call last):\n"
        '  File "/home/alice/proj/app.py", line 12, in main\n    run()\n'
        "AttributeError: 'Foo' object has no attribute 'bar'\n"
    )
    b = (
        "Traceback (most recent call last):\n"
        '  File "/tmp/other/app.py", line 987, in handler\n    go()\n'
        '  File "/tmp/other/lib.py", line 3, in go\n    x.baz\n'
        "AttributeError: 'Qux' object has no attribute 'baz'\n"
    )
    assert (
        normalize_error(a)
        == normalize_error(b)
        == "AttributeError: 'X' object has no attribute 'X'"
    )
    assert fingerprint(a) == fingerprint(b)

    c = "src/app.ts:3:7 - error TS2322: Type 'string' is not assignable to type 'number'. at 0x7f3a2b1c"
    d = 'src/app.ts:41:13 - error TS2322: Type "Foo" is not assignable to type "Bar". at 0xdeadbeef'
    assert normalize_error(c) == normalize_error(d)
    assert fingerprint(c) == fingerprint(d) == "COMPILE_ERROR|tsc"

    e = JAVA_CAUSED_BY
    f = JAVA_CAUSED_BY.replace("Main.java:9", "Main.java:1234").replace('"s"', '"name"')
    assert normalize_error(e) == normalize_error(f)


@pytest.mark.parametrize(
    ("raw", "normalised"),
    [
        ("main.c:12:5: error: x", "main.c:X:X: error: x"),
        ("error on line 42 of input", "error on line X of input"),
        ("KeyError: 'some_key'", "KeyError: 'X'"),
        ('NameError: name "foo" is not defined', "NameError: name 'X' is not defined"),
        ("cannot find value `x` in this scope", "cannot find value 'X' in this scope"),
        ("can't open file", "can't open file"),
        ("<Foo object at 0x7f3a2b1c9d00> failed", "<Foo object at 0xX> failed"),
        ("2024-05-01T12:34:56.789Z worker crashed", "T worker crashed"),
        ("[12:34:56] worker crashed", "[T] worker crashed"),
        ("pid 123456 exited with status 1", "pid N exited with status 1"),
        ("tests/test_a.py:42: AssertionError", "tests/test_a.py:X: AssertionError"),
        ("===== 3 failed, 12 passed in 4.56s =====", "N failed, N passed in Ns"),
        ("\x1b[31mERROR\x1b[0m:   something\t\tbroke  ", "ERROR: something broke"),
    ],
)
def test_normalisation_rules(raw, normalised):
    assert normalize_error(raw) == normalised


def test_stack_frames_are_removed():
    out = normalize_error(NODE_TYPE_ERROR)
    assert "TypeError: Cannot read properties of undefined (reading 'X')" in out
    assert "Module._compile" not in out and "getName" not in out
    out = normalize_error(JAVA_RUNTIME)
    assert "DeserializationContext" not in out and "more" not in out
    out = normalize_error(
        "panic: runtime error: index out of range [5] with length 3\n\ngoroutine 1 [running]:\n"
        "main.main()\n\t/tmp/x.go:8 +0x1d\nexit status 2\n"
    )
    assert out == "panic: runtime error: index out of range [5] with length 3 exit status 2"


def test_normalised_text_is_bounded_and_keeps_the_informative_end():
    noise = "".join(f"collecting module_{i} ... ok\n" for i in range(5000))
    text = noise + PYTEST_FAILURE
    out = normalize_error(text)
    assert len(out) <= MAX_NORMALIZED_CHARS
    assert "FAILED tests/test_point.py::test_distance" in out
    assert fingerprint(text) == "TEST_FAILURE|pytest"


def test_repeated_lines_collapse():
    text = "".join(f"src/A{i}.java:{i}: error: cannot find symbol\n" for i in range(3))
    assert normalize_error(text).count("cannot find symbol") == 3  # distinct file names
    same = "".join(f"src/A.java:{i}: error: cannot find symbol\n" for i in range(50))
    assert normalize_error(same) == "src/A.java:X: error: cannot find symbol"


# ------------------------------------------------------------------ robustness, bounds


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   \n\t ",
        None,
        b"\xff\xfe\x00binary\x00\x9c",
        bytes(range(256)),
        bytes(range(256)).decode("latin-1"),
        "\ud800 lone surrogate",
        "\x1b[" * 1000,
        12345,
    ],
)
def test_garbage_never_raises(text):
    fp = fingerprint(text)
    assert FINGERPRINT_SHAPE.match(fp)
    assert isinstance(normalize_error(text), str)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=3000))
def test_any_text_gives_a_wellformed_fingerprint(text):
    assert FINGERPRINT_SHAPE.match(fingerprint(text))
    assert len(normalize_error(text)) <= MAX_NORMALIZED_CHARS


@pytest.mark.parametrize(
    "text",
    [
        "'" * 1_000_000,
        '"a' * 500_000,
        "1:" * 500_000,
        "a1" * 500_000,
        "    at " + "a:1" * 300_000,
        "E   " * 250_000,
        "Traceback (most recent call last):\n" * 30_000,
        "x" * 1_000_000,
        "eyJ-" * 250_000,
        ("tests/test_a.py::test_%d FAILED\n" * 30_000),
    ],
    ids=[
        "quotes",
        "dquotes",
        "colons",
        "hexish",
        "js-at",
        "pytest-E",
        "tb-headers",
        "one-line",
        "dashes",
        "many-lines",
    ],
)
def test_huge_and_pathological_inputs_complete(text):
    assert FINGERPRINT_SHAPE.match(fingerprint(text))
    assert len(normalize_error(text)) <= MAX_NORMALIZED_CHARS


def test_huge_output_is_classified_from_its_head_and_its_tail():
    filler = "some ordinary progress line\n" * 40_000  # > 1 MB
    assert fingerprint(JAVAC_ERROR + filler) == "COMPILE_ERROR|javac"
    assert fingerprint(filler + PY_IMPORT_TB) == "PYTHON_TRACEBACK|importing"


def test_table_rows_are_wellformed():
    for table in (fingerprinter._TOOL_TABLE, fingerprinter._MESSAGE_TABLE):
        for needles, rx, typ, op in table:
            assert needles and all(isinstance(n, str) and n for n in needles), rx.pattern
            assert FINGERPRINT_SHAPE.match(f"{typ}|{op}"), (typ, op)
    for table in (fingerprinter._PYTHON_TABLE, fingerprinter._JS_TABLE):
        for _, typ, op in table:
            assert FINGERPRINT_SHAPE.match(f"{typ}|{op}"), (typ, op)


def test_import_is_standard_library_only():
    code = (
        "import sys, brainbox.fingerprint, brainbox.redact; "
        "bad = [m for m in ('numpy', 'numba', 'scipy') if m in sys.modules]; "
        "assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
