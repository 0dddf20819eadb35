/** The gate of unauthenticated inbound sockets: bounds per IP and in total, eviction by age, deadline. */
import { describe, expect, it } from 'vitest';
import { InboundGate } from '../../src/p2p/gate.ts';

function gate(total: number, perIp: number, timeoutMs = 60_000) {
  const g = new InboundGate({ total, perIp, timeoutMs });
  const evicted: string[] = [];
  const enter = (ip: string, name: string) => g.enter(ip, (reason) => evicted.push(`${name}: ${reason}`));
  return { g, evicted, enter };
}

describe('InboundGate', () => {
  it('evicts the oldest socket of an IP at its bound, leaving other IPs alone', () => {
    const { g, evicted, enter } = gate(10, 2);
    enter('1.1.1.1', 'a1');
    enter('2.2.2.2', 'b1');
    enter('1.1.1.1', 'a2');
    enter('1.1.1.1', 'a3');
    expect(evicted).toEqual(['a1: evicted by a newer unauthenticated connection']);
    expect(g.size).toBe(3);
  });

  it('evicts the oldest of all at the total bound', () => {
    const { g, evicted, enter } = gate(3, 3);
    enter('1.1.1.1', 'a1');
    enter('2.2.2.2', 'b1');
    enter('3.3.3.3', 'c1');
    enter('4.4.4.4', 'd1');
    expect(evicted).toEqual(['a1: evicted by a newer unauthenticated connection']);
    expect(g.size).toBe(3);
  });

  it('a socket that leaves stops counting and is never evicted', () => {
    const { g, evicted, enter } = gate(10, 1);
    enter('1.1.1.1', 'a1').leave();
    enter('1.1.1.1', 'a2');
    expect(evicted).toEqual([]);
    expect(g.size).toBe(1);
  });

  it('tears a socket down at its deadline', async () => {
    const { g, evicted, enter } = gate(10, 10, 20);
    enter('1.1.1.1', 'a1');
    const kept = enter('1.1.1.1', 'a2');
    kept.leave();
    await new Promise((r) => setTimeout(r, 60));
    expect(evicted).toEqual(['a1: handshake timeout']);
    expect(g.size).toBe(0);
  });
});
