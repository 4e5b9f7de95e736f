"""brainbox.text.tokens remembers the last texts' terms: the same terms as tokenising afresh,
a new list each call (a caller's change stays its own), and a text longer than the memo's
bound (the code index tokenises whole files) is tokenised without being kept."""

import random

from brainbox import text as T

WORDS = ["LoginForm", "handler_name", "src/auth.py", "the", "x", "HTTPServer2", "--dry-run",
         "42", "parse_time", "fooBarBaz", "é", "a_b-c", "README.md"]


def test_remembered_terms_equal_fresh_ones():
    rng = random.Random(5)
    texts = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 30))) for _ in range(300)]
    for t in texts + texts[::-1]:  # the second pass hits the memo for the last 256
        assert T.tokens(t) == list(T._terms.__wrapped__(t))
    assert T._terms.cache_info().hits > 0
    assert T.tokens("LoginForm the x", limit=8) == T.tokens("LoginFor")


def test_each_call_gives_a_new_list():
    first = T.tokens("fix the LoginForm handler")
    first.append("changed")
    assert T.tokens("fix the LoginForm handler") == ["fix", "login", "form", "loginform",
                                                      "handler"]


def test_a_whole_file_is_not_kept():
    big = "word_one wordTwo " * 5_000  # 85,000 characters
    T._terms.cache_clear()
    terms = T.tokens(big, limit=len(big))
    assert terms == list(T._terms.__wrapped__(big)) and len(terms) > 10_000
    assert T._terms.cache_info().currsize == 0
    assert T.tokens(big) == list(T._terms.__wrapped__(big[:20_000]))  # the default limit
    assert T._terms.cache_info().currsize == 1
