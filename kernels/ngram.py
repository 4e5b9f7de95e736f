"""Suffix n-grams of the tool stream: (last 1, 2 or 3 tools) -> next tool (DESIGN §4.5).

The kernel emits (context, next tool) pairs; the engine counts them into a sparse matrix.
A context is one int64: ``(a+1) + (b+1) * 2**20 + (c+1) * 2**40`` for tools a, b, c oldest
to newest, -1 where absent, the suffix filling the last slots. Tool ids must be < 2**20 - 1.
"""

from ._jit import jit

CTX_BASE = 1 << 20
ORDER = 3


@jit
def encode_ctx(a, b, c):
    """Context code of tools (a, b, c), oldest to newest, -1 for an absent slot."""
    return (a + 1) + (b + 1) * CTX_BASE + (c + 1) * (CTX_BASE * CTX_BASE)


@jit
def ngram_pairs(seq_sess, seq_tool, last3, last3_len, out_ctx, out_next):
    """Emit the suffix contexts of each tool call, then append the call to its session.

    seq_sess int64[T] session row, seq_tool int64[T] tool id (read only); last3 int64[S, 3]
    each session's last up-to-3 tools oldest first and last3_len int64[S] (0..3), updated in
    place; out_ctx, out_next int64[>= 3T] written from index 0. For each call, before it is
    appended, pairs (suffix of length k, tool) are emitted for k = 1..min(3, last3_len).
    Returns the number of pairs. Splitting the stream into batches gives the same pairs.
    """
    cnt = 0
    for i in range(seq_tool.shape[0]):
        s = seq_sess[i]
        tool = seq_tool[i]
        L = min(last3_len[s], ORDER)
        if L >= 1:
            out_ctx[cnt] = encode_ctx(-1, -1, last3[s, L - 1])
            out_next[cnt] = tool
            cnt += 1
        if L >= 2:
            out_ctx[cnt] = encode_ctx(-1, last3[s, L - 2], last3[s, L - 1])
            out_next[cnt] = tool
            cnt += 1
        if L >= 3:
            out_ctx[cnt] = encode_ctx(last3[s, 0], last3[s, 1], last3[s, 2])
            out_next[cnt] = tool
            cnt += 1
        if L < ORDER:
            last3[s, L] = tool
            last3_len[s] = L + 1
        else:
            last3[s, 0] = last3[s, 1]
            last3[s, 1] = last3[s, 2]
            last3[s, 2] = tool
    return cnt
