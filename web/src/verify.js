// Every file the page's model runs is checked against the sha256 the server computed at its start
// (toyviz/app/browser_model.py): what makes fetching them from another origin (a CDN) safe, and what
// catches a server whose checkpoint changed under the graphs.

async function sha256(bytes) {
  const digest = await crypto.subtle.digest("SHA-256", bytes);
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

const foreign = (url) => new URL(url, location.href).origin !== location.origin;

// → "checked", or "unverifiable" for this server's own files where the page has no crypto.subtle (plain http off
// localhost): verdicts the page says in its language (browser_model.sampler_words: sha_*); throws when the bytes are not the file the server checked, or come from
// another origin and cannot be checked
export async function verify(name, url, bytes, expected) {
  if (!globalThis.crypto?.subtle) {
    if (foreign(url)) throw new Error(`${name} comes from another origin and cannot be checked without https`);
    return "unverifiable";
  }
  const digest = await sha256(bytes);
  if (digest !== expected)
    throw new Error(`${url.split("/").pop()} is not the file this server checked (sha256 ${digest.slice(0, 12)}…, ` +
                    `expected ${expected.slice(0, 12)}…)`);
  return "checked";
}
