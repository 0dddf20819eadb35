import type { Topology } from '../src/devnet/topology.ts';

/**
 * The benches' network: alice — bob — carol, 5,000 CKB public channels. A line: alice knows of
 * bob–carol only through bob's gossip (she is not peered with carol).
 */
export const LINE_TOPOLOGY: Topology = {
  peers: [
    ['alice', 'bob'],
    ['bob', 'carol'],
  ],
  channels: [
    { from: 'alice', to: 'bob', funding: 5000, udt: false, public: true },
    { from: 'bob', to: 'carol', funding: 5000, udt: false, public: true },
  ],
};
