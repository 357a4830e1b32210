// The Redis Cluster hash slot of a key (CRC16 of the key or its {hash tag},
// mod 16384): ioredis's own slot function, which ships without types.
declare module 'cluster-key-slot' {
  export default function calculateSlot(key: string | Buffer): number;
}
