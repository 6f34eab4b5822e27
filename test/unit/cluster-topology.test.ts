// Where relock's sharded subscriber connects: the master of a slot as ioredis's Cluster maps it. A
// MOVED reply leaves the address as Redis sent it in ioredis's slot map (redis/ioredis#1582); behind
// a NAT that address is unreachable, so it goes through the Cluster's natMap again.
import * as assert from 'uvu/assert';
import { Cluster, type ClusterOptions } from 'ioredis';
import { clusterTopology } from '../../src/port/ioredis.ts';
import { describe } from '../helpers/describe.ts';

/** A Cluster that never connects (lazyConnect): only its natMap and slot map are read. */
function cluster(natMap: ClusterOptions['natMap']) {
  const made = new Cluster([{ host: '10.0.0.1', port: 7000 }], { lazyConnect: true, natMap });
  return Object.assign(made, { slots: made.slots as string[][] });
}

describe('clusterTopology', (it) => {
  it('maps an address a MOVED wrote into the slot map through a natMap object', () => {
    const c = cluster({ '10.0.0.1:7000': { host: '203.0.113.5', port: 17000 } });
    c.slots[5] = ['10.0.0.1:7000'];
    assert.is(clusterTopology(c).owner(5), '203.0.113.5:17000');
  });

  it('leaves an address the refresh mapped already as it is', () => {
    const c = cluster({ '10.0.0.1:7000': { host: '203.0.113.5', port: 17000 } });
    c.slots[6] = ['203.0.113.5:17000'];
    assert.is(clusterTopology(c).owner(6), '203.0.113.5:17000');
  });

  it('maps through a natMap function, and knows no owner of a slot not in the map', () => {
    const c = cluster((key: string) => (key === '10.0.0.2:7001' ? { host: 'nat.example', port: 27001 } : null));
    c.slots[7] = ['10.0.0.2:7001'];
    c.slots[8] = ['10.0.0.3:7002'];
    const topology = clusterTopology(c);
    assert.is(topology.owner(7), 'nat.example:27001');
    assert.is(topology.owner(8), '10.0.0.3:7002');
    assert.is(topology.owner(9), undefined);
  });

  it('reads the slot map as it is without a natMap', () => {
    const c = cluster(undefined);
    c.slots[10] = ['10.0.0.1:7000'];
    assert.is(clusterTopology(c).owner(10), '10.0.0.1:7000');
  });
});
