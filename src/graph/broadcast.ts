/**
 * Rules on one broadcast message, apart from any state: its cursor, whether two are the same, and
 * whether a node announcement names a public address.
 */
import { isIP } from 'node:net';
import { multiaddr } from '@multiformats/multiaddr';
import { equalBytes } from '../codec/index.ts';
import { CURSOR_TYPE, type CursorType, makeCursor } from './cursor.ts';
import { type BroadcastMessage, encodeGossipMessage, encodeOutPoint } from './messages.ts';

/** The cursor of a message; a channel announcement takes the funding block's timestamp. */
export function cursorOf(m: BroadcastMessage, caTimestamp: bigint): Uint8Array | null {
  let type: CursorType;
  let id: Uint8Array;
  let ts: bigint;
  if (m.type === 'ChannelAnnouncement') {
    type = CURSOR_TYPE.ChannelAnnouncement;
    id = encodeOutPoint(m.value.channelOutpoint);
    ts = caTimestamp;
  } else if (m.type === 'ChannelUpdate') {
    type = CURSOR_TYPE.ChannelUpdate;
    id = encodeOutPoint(m.value.channelOutpoint);
    ts = m.value.timestamp;
  } else {
    type = CURSOR_TYPE.NodeAnnouncement;
    id = m.value.nodeId;
    ts = m.value.timestamp;
  }
  return makeCursor(ts, type, id);
}

/** Whether two messages are the same, byte for byte. */
export function sameMessage(a: BroadcastMessage, b: BroadcastMessage): boolean {
  return (
    a.type === b.type &&
    equalBytes(
      encodeGossipMessage({ type: 'BroadcastMessagesFilterResult', messages: [a] }),
      encodeGossipMessage({ type: 'BroadcastMessagesFilterResult', messages: [b] }),
    )
  );
}

/** Whether any announced address is public (not loopback, private, link-local or unspecified). */
export function hasPublicAddress(addresses: Uint8Array[]): boolean {
  for (const raw of addresses) {
    let text: string;
    try {
      text = multiaddr(raw).toString();
    } catch {
      continue;
    }
    const parts = text.split('/');
    const proto = parts[1];
    const host = parts[2] ?? '';
    if (proto === 'dns' || proto === 'dns4' || proto === 'dns6') {
      if (host !== 'localhost') return true;
      continue;
    }
    if ((proto === 'ip4' || proto === 'ip6') && isIP(host) && !isPrivateIp(host)) return true;
  }
  return false;
}

function isPrivateIp(ip: string): boolean {
  if (isIP(ip) === 4) {
    const [a, b] = ip.split('.').map(Number) as [number, number];
    return (
      a === 0 ||
      a === 10 ||
      a === 127 ||
      (a === 169 && b === 254) ||
      (a === 172 && b >= 16 && b <= 31) ||
      (a === 192 && b === 168)
    );
  }
  const l = ip.toLowerCase();
  return l === '::' || l === '::1' || l.startsWith('fc') || l.startsWith('fd') || l.startsWith('fe80');
}
