// The GPT's byte-level BPE tokenizer, exactly as Python's tiktoken encodes user text (special-token
// strings stay plain text). The split pattern of tokenizer.json is Rust regex syntax that JavaScript
// cannot read (possessive quantifiers, (?i:…)); SPLIT below is its translation:
//  - `?+` and `++` become greedy: each is followed by a class the possessive part cannot give back to,
//    so backtracking never finds another match;
//  - (?i:[sdmt]|ll|ve|re) is spelled out, including ſ (U+017F), which Unicode case-folds to s;
//  - \s is Unicode's White_Space, written out: JavaScript's \s adds U+FEFF and leaves out U+0085.
// tests/test_browser_model.py checks the result against Python on over 30,000 tokens.
const WS = "\\t-\\r \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000";
const SPLIT = new RegExp(
  `'(?:[sdmtSDMTſ]|[lL][lL]|[vV][eE]|[rR][eE])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,2}` +
  `| ?[^${WS}\\p{L}\\p{N}]+[\\r\\n]*|[${WS}]*[\\r\\n]|[${WS}]+(?![^${WS}])|[${WS}]+`, "gu");

const utf8 = new TextEncoder();
const latin1 = (bytes) => String.fromCharCode(...bytes);   // bytes as a string key, one char per byte

export class Tokenizer {
  // ranksText: the .tiktoken file (one `base64(bytes) rank` line per token); specials follow the ranks
  constructor(ranksText, specials) {
    this.ranks = new Map();
    this.bytes = [];
    for (const line of ranksText.split("\n")) {
      if (!line) continue;
      const [b64, rank] = line.split(" ");
      const key = atob(b64);
      this.ranks.set(key, Number(rank));
      this.bytes[Number(rank)] = key;
    }
    this.specials = specials;
    this.bos = this.ranks.size;              // the first special token: <|endoftext|>
  }

  encode(text) {
    const ids = [];
    for (const [piece] of text.matchAll(SPLIT)) this.mergeInto(latin1(utf8.encode(piece)), ids);
    return ids;
  }

  // tiktoken's byte_pair_encode: merge the adjacent pair whose joined bytes rank lowest, leftmost first
  mergeInto(piece, ids) {
    const whole = this.ranks.get(piece);
    if (whole !== undefined) { ids.push(whole); return; }
    const cuts = Array.from({ length: piece.length + 1 }, (_, i) => i);
    for (;;) {
      let best = Infinity, at = -1;
      for (let i = 0; i + 2 < cuts.length; i++) {
        const rank = this.ranks.get(piece.slice(cuts[i], cuts[i + 2]));
        if (rank !== undefined && rank < best) { best = rank; at = i; }
      }
      if (at < 0) break;
      cuts.splice(at + 1, 1);
    }
    for (let i = 0; i + 1 < cuts.length; i++) ids.push(this.ranks.get(piece.slice(cuts[i], cuts[i + 1])));
  }

  // a token's raw bytes (a special token's name)
  tokenBytes(id) {
    const key = this.bytes[id];
    if (key === undefined) return utf8.encode(this.specials[id - this.bos] ?? "");
    return Uint8Array.from(key, (c) => c.charCodeAt(0));
  }

  // readable text of one token; bytes that are not whole UTF-8 characters shown as <0xNN> (as Python's piece)
  piece(id) {
    const bytes = this.tokenBytes(id);
    try {
      return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
    } catch {
      return Array.from(bytes, (b) => (b < 128 ? String.fromCharCode(b) : `<0x${b.toString(16).toUpperCase().padStart(2, "0")}>`)).join("");
    }
  }
}
