/** yamux against tokio-yamux's behaviour (tentacle-protocol.md §3), in memory. */
import { describe, expect, it, vi } from 'vitest';
import { bytesToHex } from '../../src/codec/hex.ts';
import {
  encodeHeader,
  FLAG_ACK,
  FLAG_FIN,
  FLAG_RST,
  FLAG_SYN,
  INITIAL_WINDOW,
  YamuxSession,
  type YamuxStream,
} from '../../src/p2p/yamux.ts';

const hex = (b: Uint8Array) => bytesToHex(b, false);

function harness(client: boolean, opts: { keepAliveMs?: number; maxStreams?: number } = {}) {
  const out: Uint8Array[] = [];
  const streams: YamuxStream[] = [];
  const closed: (Error | undefined | 'none')[] = [];
  const s = new YamuxSession({
    client,
    write: (b) => out.push(b.slice()),
    onStream: (st) => streams.push(st),
    onClose: (e) => closed.push(e ?? 'none'),
    keepAliveMs: opts.keepAliveMs ?? 0,
    maxStreams: opts.maxStreams,
  });
  return { s, out, streams, closed };
}

/** Two sessions wired together synchronously. */
function pair() {
  const a = harness(true);
  const b = harness(false);
  const pump = () => {
    while (a.out.length || b.out.length) {
      for (const x of a.out.splice(0)) b.s.receive(x);
      for (const x of b.out.splice(0)) a.s.receive(x);
    }
  };
  return { a, b, pump };
}

describe('yamux', () => {
  it('opens client streams with a bare SYN window update on odd ids, as the reference does', () => {
    const { s, out } = harness(true);
    const st = s.openStream();
    expect(st.id).toBe(1);
    expect(hex(out[0]!)).toBe('000100010000000100000000');
    expect(s.openStream().id).toBe(3);
    expect(harness(false).s.openStream().id).toBe(2);
  });

  it('accepts a SYN with a bare ACK and delivers data sent right behind it', () => {
    const { s, out, streams } = harness(false);
    s.receive(encodeHeader(1, FLAG_SYN, 1, 0));
    s.receive(new Uint8Array([...encodeHeader(0, 0, 1, 3), 7, 8, 9]));
    expect(hex(out[0]!)).toBe('000100020000000100000000');
    const got: number[] = [];
    streams[0]!.onData = (d) => got.push(...d);
    s.receive(new Uint8Array([...encodeHeader(0, 0, 1, 2), 1, 2]));
    expect(streams.length).toBe(1);
    expect(got).toEqual([1, 2]);
  });

  it('reassembles frames split at any byte', () => {
    const got: number[] = [];
    const s = new YamuxSession({
      client: false,
      write: () => {},
      onStream: (st) => {
        st.onData = (d) => got.push(...d);
      },
      onClose: () => {},
      keepAliveMs: 0,
    });
    const bytes = new Uint8Array([
      ...encodeHeader(1, FLAG_SYN, 1, 0),
      ...encodeHeader(0, 0, 1, 4),
      1,
      2,
      3,
      4,
    ]);
    for (const b of bytes) s.receive(new Uint8Array([b]));
    expect(got).toEqual([1, 2, 3, 4]);
  });

  it('answers pings with the same id and reports GoAway', () => {
    const { s, out, closed } = harness(false);
    s.receive(encodeHeader(2, FLAG_SYN, 0, 77));
    expect(hex(out[0]!)).toBe('00020002000000000000004d');
    s.receive(encodeHeader(3, 0, 0, 0));
    expect(hex(out[1]!)).toBe('000300000000000000000000'); // our GoAway(0) in answer
    expect(closed).toEqual(['none']);
    expect(s.isClosed).toBe(true);
  });

  it('respects the peer’s window and resumes on a window update', async () => {
    const { a, b, pump } = pair();
    const st = a.s.openStream();
    pump();
    let received = 0;
    b.streams[0]!.onData = (d) => {
      received += d.length;
    };
    st.write(new Uint8Array(INITIAL_WINDOW - 1000));
    st.write(new Uint8Array(2000));
    await Promise.resolve(); // writes of one tick are flushed together
    // Only the window goes out until b's update arrives.
    const sent = a.out.reduce((n, x) => n + (x.length === 12 ? 0 : x.length), 0);
    expect(sent).toBe(INITIAL_WINDOW);
    expect(st.pendingBytes).toBe(1000);
    pump();
    expect(received).toBe(INITIAL_WINDOW + 1000);
    expect(st.pendingBytes).toBe(0);
  });

  it('ends a stream on FIN, on RST, and refuses a duplicate SYN with GoAway(1)', () => {
    const { s, out, streams, closed } = harness(false);
    s.receive(encodeHeader(1, FLAG_SYN, 1, 0));
    s.receive(encodeHeader(1, FLAG_SYN, 3, 0));
    const ends: string[] = [];
    streams[0]!.onEnd = (h) => ends.push(`1:${h}`);
    streams[1]!.onEnd = (h) => ends.push(`3:${h}`);
    s.receive(encodeHeader(1, FLAG_FIN, 1, 0));
    s.receive(encodeHeader(0, FLAG_RST, 3, 0));
    expect(ends).toEqual(['1:fin', '3:reset']);
    s.receive(encodeHeader(1, FLAG_SYN, 5, 0));
    s.receive(encodeHeader(1, FLAG_SYN, 5, 0));
    expect(hex(out.at(-1)!)).toBe('000300000000000000000001');
    expect(closed[0]).toBeInstanceOf(Error);
  });

  it('refuses streams past the limit with ACK|RST and drops frames for unknown streams', () => {
    const { s, out, streams } = harness(false, { maxStreams: 1 });
    s.receive(encodeHeader(1, FLAG_SYN, 1, 0));
    s.receive(encodeHeader(1, FLAG_SYN, 3, 0));
    expect(hex(out.at(-1)!)).toBe(hex(encodeHeader(1, FLAG_ACK | FLAG_RST, 3, 0)));
    s.receive(new Uint8Array([...encodeHeader(0, 0, 99, 2), 1, 2]));
    expect(streams.length).toBe(1);
    expect(s.isClosed).toBe(false);
  });

  it('treats a bad version, an unknown type, an oversized frame and a window overrun as fatal', () => {
    for (const bad of [
      new Uint8Array([1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0]),
      new Uint8Array([0, 4, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0]),
      encodeHeader(0, 0, 1, INITIAL_WINDOW + 1),
    ]) {
      const { s, closed } = harness(false);
      s.receive(bad);
      expect(closed.length).toBe(1);
      expect(closed[0]).toBeInstanceOf(Error);
    }
    const { s, out, closed } = harness(false);
    s.receive(encodeHeader(1, FLAG_SYN, 1, 0));
    // Just under half a window (no update owed yet), then more than what is left of it.
    const half = INITIAL_WINDOW / 2 - 1;
    s.receive(new Uint8Array([...encodeHeader(0, 0, 1, half), ...new Uint8Array(half)]));
    expect(closed.length).toBe(0);
    const over = INITIAL_WINDOW - half + 1;
    s.receive(new Uint8Array([...encodeHeader(0, 0, 1, over), ...new Uint8Array(over)]));
    expect(hex(out.at(-1)!)).toBe('000300000000000000000001');
    expect(closed[0]).toBeInstanceOf(Error);
  });

  it('closes on an unanswered ping', async () => {
    const { s, out, closed } = harness(true, { keepAliveMs: 30 });
    // A ping at 30 ms, the close 30 ms after it; each timer may fire late on a loaded machine.
    await vi.waitFor(() => expect(closed.length).toBe(1), { timeout: 5000, interval: 10 });
    expect(hex(out[0]!)).toBe(hex(encodeHeader(2, FLAG_SYN, 0, 1)));
    expect(closed[0]).toBeInstanceOf(Error);
    expect((closed[0] as Error).message).toMatch(/ping/);
    expect(s.isClosed).toBe(true);
  });

  it('closes orderly: FIN on streams, then GoAway(0)', () => {
    const { s, out, closed } = harness(true);
    s.openStream();
    out.length = 0;
    s.close();
    expect(out.map(hex)).toEqual([hex(encodeHeader(1, FLAG_FIN, 1, 0)), '000300000000000000000000']);
    expect(closed).toEqual(['none']);
  });
});
