/** An upstream's origin, parsed once when its target is made. */
export interface Origin {
  readonly href: string;
  readonly secure: boolean;
  readonly host: string;
  readonly port: number;
  /** host[:port] with the scheme's default port left out, as a Host header. */
  readonly authority: string;
}

export function parseOrigin(origin: string): Origin {
  const url = new URL(origin);
  const secure = url.protocol === 'https:';
  const port = url.port ? Number(url.port) : secure ? 443 : 80;
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  return { href: `${url.protocol}//${url.host}`, secure, host, port, authority: url.host };
}
