/**
 * Whether a bind address is private (loopback, LAN, link-local), where RPC authentication is
 * optional, or public/unspecified, where it is mandatory (seed §Authentication).
 */
import net from 'node:net';

export interface HostPort {
  host: string;
  port: number;
}

/** `127.0.0.1:8227`, `[::1]:8227`, `localhost:0`. */
export function parseHostPort(text: string): HostPort {
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(text);
  const port = m ? Number(m[3]) : Number.NaN;
  if (!m || port > 65535) throw new Error(`invalid listen address '${text}', expected host:port`);
  return { host: (m[1] ?? m[2])!, port };
}

export function isPrivateHost(host: string): boolean {
  if (host === 'localhost') return true;
  const v = net.isIP(host);
  if (v === 4) {
    const [a, b] = host.split('.').map(Number) as [number, number];
    return (
      a === 127 || // loopback
      a === 10 ||
      (a === 172 && b >= 16 && b <= 31) ||
      (a === 192 && b === 168) ||
      (a === 169 && b === 254) // link-local
    );
  }
  if (v === 6) {
    const h = host.toLowerCase();
    if (h === '::1') return true;
    const first = Number.parseInt(h.split(':')[0] || '0', 16);
    return (
      (first & 0xfe00) === 0xfc00 /* unique local fc00::/7 */ || (first & 0xffc0) === 0xfe80
    ); /* fe80::/10 */
  }
  // A host name other than localhost may resolve anywhere: treat it as public.
  return false;
}
