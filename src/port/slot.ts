// The Redis Cluster hash slot of a key or shard channel: CRC16 (XMODEM) of the key, or of the part
// between its first `{` and the next `}` when that part is not empty, modulo 16384. A fact of the
// protocol, so port/'s: the adapters route by it; runtime/slot.ts hands it to the layers above.
//
// Not the cluster-key-slot package (ioredis and node-redis depend on it): it disagrees with Redis on
// a key whose first tag is empty, such as `foo{}{bar}` (test/unit/slot.test.ts).

const TABLE = (() => {
  const table = new Uint16Array(256);
  for (let byte = 0; byte < 256; byte++) {
    let crc = byte << 8;
    for (let bit = 0; bit < 8; bit++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
    table[byte] = crc;
  }
  return table;
})();

function crc16(bytes: Uint8Array, from: number, to: number): number {
  let crc = 0;
  for (let i = from; i < to; i++) crc = ((crc << 8) & 0xffff) ^ TABLE[((crc >> 8) ^ bytes[i]!) & 0xff]!;
  return crc;
}

/** The slot of `key` (0..16383), as Redis Cluster computes it. */
export function keySlot(key: string): number {
  const bytes = Buffer.from(key, 'utf8');
  const open = bytes.indexOf(0x7b); // {
  if (open >= 0) {
    const close = bytes.indexOf(0x7d, open + 1); // }
    if (close > open + 1) return crc16(bytes, open + 1, close) % 16384;
  }
  return crc16(bytes, 0, bytes.length) % 16384;
}
