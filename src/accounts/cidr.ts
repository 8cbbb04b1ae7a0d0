import { BlockList, isIP } from 'node:net';

/** Whether an address falls inside one of the CIDR blocks (IPv4-mapped IPv6 addresses count as IPv4). */
export function ipAllowed(cidrs: readonly string[], ip: string): boolean {
  const address = ip.startsWith('::ffff:') && isIP(ip.slice(7)) === 4 ? ip.slice(7) : ip;
  const family = isIP(address);
  if (family === 0) return false;
  const list = new BlockList();
  for (const cidr of cidrs) {
    const [network = '', bits] = cidr.split('/');
    const networkFamily = isIP(network);
    if (networkFamily === 0) continue;
    const type = networkFamily === 4 ? 'ipv4' : 'ipv6';
    list.addSubnet(network, bits === undefined ? (networkFamily === 4 ? 32 : 128) : Number(bits), type);
  }
  return list.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

/** Whether a string is an IPv4 or IPv6 CIDR block (or a single address). */
export function isCidr(value: string): boolean {
  const [network = '', bits, extra] = value.split('/');
  const family = isIP(network);
  if (family === 0 || extra !== undefined) return false;
  if (bits === undefined) return true;
  const n = Number(bits);
  return /^\d+$/.test(bits) && n >= 0 && n <= (family === 4 ? 32 : 128);
}
