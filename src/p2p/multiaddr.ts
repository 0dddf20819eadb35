/**
 * Multiaddrs the node dials and announces: `/ip4|ip6|dns4|dns6/<host>/tcp/<port>[/ws][/p2p/<id>]`.
 * Parsing uses @multiformats/multiaddr; the error texts follow tentacle-multiaddr's Display
 * (`invalid multiaddr`, `unknown protocol string`, …) since the RPC reports them as is.
 */
import { multiaddr } from '@multiformats/multiaddr';
import { peerIdDigest } from '../crypto/index.ts';
import { P2pError } from './errors.ts';

export interface DialTarget {
  /** The address as given (normalised text form). */
  address: string;
  host: string;
  port: number;
  ws: boolean;
  /** The `/p2p/<id>` component when present. */
  peerId?: string;
}

export class MultiaddrError extends P2pError {
  constructor(message: string) {
    super('Malformed', message);
  }
}

export function parseDialAddress(text: string, allowPortZero = false): DialTarget {
  let ma: ReturnType<typeof multiaddr>;
  try {
    ma = multiaddr(text);
  } catch (e) {
    const name = (e as Error).name;
    throw new MultiaddrError(
      name === 'UnknownProtocolError' ? 'unknown protocol string' : 'invalid multiaddr',
    );
  }
  let host: string | undefined;
  let port: number | undefined;
  let ws = false;
  let peerId: string | undefined;
  for (const c of ma.getComponents()) {
    switch (c.name) {
      case 'ip4':
      case 'ip6':
      case 'dns4':
      case 'dns6':
      case 'dns':
        host ??= c.value;
        break;
      case 'tcp':
        port ??= Number(c.value);
        break;
      case 'ws':
        ws = true;
        break;
      case 'wss':
      case 'tls':
        throw new MultiaddrError(`multiaddr \`${text}\` is not supported`);
      case 'p2p':
        peerId ??= c.value;
        break;
      default:
        throw new MultiaddrError(`multiaddr \`${text}\` is not supported`);
    }
  }
  if (
    !host ||
    port === undefined ||
    !Number.isInteger(port) ||
    port < (allowPortZero ? 0 : 1) ||
    port > 65535
  ) {
    throw new MultiaddrError(`multiaddr \`${text}\` is not supported`);
  }
  if (peerId !== undefined) {
    try {
      peerIdDigest(peerId);
    } catch {
      throw new MultiaddrError('invalid multiaddr');
    }
  }
  return { address: ma.toString(), host, port, ws, peerId };
}

/** `/ip4/<host>/tcp/<port>` from a listening multiaddr like the config's `fiber.listening_addr`. */
export function parseListenAddress(text: string): { host: string; port: number } {
  const t = parseDialAddress(text, true);
  if (t.ws || t.peerId) throw new MultiaddrError('listening address must be /ip4|ip6/<host>/tcp/<port>');
  return { host: t.host, port: t.port };
}

export function formatAddress(host: string, port: number, ws: boolean, peerId?: string): string {
  const ip = host.includes(':') ? 'ip6' : /^[\d.]+$/.test(host) ? 'ip4' : 'dns4';
  return `/${ip}/${host}/tcp/${port}${ws ? '/ws' : ''}${peerId ? `/p2p/${peerId}` : ''}`;
}
