// Which protocols an HTTP/1.1 upgrade may switch to (ADR 0118): the request's `Upgrade` checked against
// `config.upgradeProtocols` before anything goes upstream, and the upstream's 101 checked against the request.

/** An `Upgrade` value's protocols (RFC 9110 section 7.8: `name[/version]`, comma-separated), lower-cased. */
function protocols(value: string): string[] {
  const list: string[] = [];
  for (const member of value.split(',')) {
    const p = member.trim().toLowerCase();
    if (p !== '') list.push(p);
  }
  return list;
}

const nameOf = (protocol: string): string => {
  const slash = protocol.indexOf('/');
  return slash === -1 ? protocol : protocol.slice(0, slash);
};

/**
 * Whether every protocol the client offers is enabled (`allowed`: lower-case names). A list with one that is not
 * is refused whole: the upstream, not the gateway, would choose among them.
 */
export function upgradeAllowed(requested: string | undefined, allowed: readonly string[]): boolean {
  if (requested === undefined) return false;
  const offered = protocols(requested);
  if (offered.length === 0) return false;
  for (const p of offered) if (!allowed.includes(nameOf(p))) return false;
  return true;
}

/**
 * Whether a 101's `Upgrade` names only protocols the client asked for (RFC 9110 section 7.8: a server must not switch
 * to one the client did not indicate), compared without regard to case; a version on both sides must agree. A 101
 * without `Upgrade` names none and fails.
 */
export function switchMatches(requested: string | undefined, answered: string | undefined): boolean {
  if (requested === undefined || answered === undefined) return false;
  const asked = protocols(requested);
  const got = protocols(answered);
  if (got.length === 0) return false;
  for (const p of got) {
    const name = nameOf(p);
    const ok = asked.some((a) => a === p || (nameOf(a) === name && (a === name || p === name)));
    if (!ok) return false;
  }
  return true;
}
