import { isIP } from 'node:net';

/**
 * The unit an address is throttled by: an IPv4 address itself (an IPv4-mapped IPv6 address counts as its
 * IPv4 address), an IPv6 address by its /64. One subscriber or host usually holds a whole /64 and can use any
 * of its 2^64 addresses, so counting each apart would give one client unlimited attempts.
 */
export function addressGroup(ip: string): string {
  const address = ip.split('%', 1)[0]!;
  if (address.startsWith('::ffff:') && isIP(address.slice(7)) === 4) return address.slice(7);
  if (isIP(address) !== 6) return address;
  return `${ipv6Hextets(address).slice(0, 4).join(':')}::/64`;
}

/** The eight 16-bit groups of an IPv6 address, in hex without leading zeros (an IPv4 tail becomes two). */
function ipv6Hextets(address: string): string[] {
  let text = address.toLowerCase();
  const tail = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (tail) {
    const [a, b, c, d] = tail.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, tail.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = '', rest] = text.split('::');
  const left = head === '' ? [] : head.split(':');
  const right = rest === undefined || rest === '' ? [] : rest.split(':');
  const zeros = rest === undefined ? [] : Array<string>(8 - left.length - right.length).fill('0');
  return [...left, ...zeros, ...right].map((group) => Number.parseInt(group, 16).toString(16));
}
