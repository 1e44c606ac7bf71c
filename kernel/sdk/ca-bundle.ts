// A CA bundle (PEM) checked block by block. node:tls takes any text as `ca` without a word, so a bundle cut short
// (a copy that stopped after its BEGIN line) loaded and then trusted nothing: every connection it guards failed.

const BEGIN = /-----BEGIN ([A-Z0-9 ]+)-----/g;

/**
 * Why `text` is not a usable CA bundle, or undefined when it is: every PEM block must end with its END line, each
 * `CERTIFICATE` block must be an X.509 certificate, and there must be at least one (a `TRUSTED CERTIFICATE` counts).
 */
export function caBundleProblem(text: string): string | undefined {
  const { X509Certificate } = process.getBuiltinModule('node:crypto');
  const begins = [...text.matchAll(BEGIN)];
  let certificates = 0;
  for (const [i, m] of begins.entries()) {
    const label = m[1]!;
    const end = `-----END ${label}-----`;
    const endAt = text.indexOf(end, m.index);
    const next = begins[i + 1]?.index ?? Infinity;
    if (endAt < 0 || endAt > next) return `PEM block ${i + 1} (${label}) has no END line: the file is cut short`;
    // OpenSSL's trusted form (`openssl x509 -addtrust`, Fedora's ca-bundle.trust.crt): node:tls trusts it as it is,
    // and X509Certificate cannot read its trust suffix, so its END line is what is checked.
    if (label === 'TRUSTED CERTIFICATE') certificates++;
    if (label !== 'CERTIFICATE') continue;
    try {
      new X509Certificate(text.slice(m.index, endAt + end.length));
    } catch (err) {
      return `PEM block ${i + 1} is not an X.509 certificate (${(err as Error).message})`;
    }
    certificates++;
  }
  return certificates ? undefined : 'it holds no certificate';
}
