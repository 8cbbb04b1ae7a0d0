import { BlockList, isIP } from 'node:net';
import type { TrustProxy } from '../core/config.ts';

/**
 * Resolves a request's client address the way Fastify's `trustProxy` (proxy-addr) does: start from the
 * socket's peer and walk X-Forwarded-For from the RIGHT, past each trusted proxy; the first untrusted hop is
 * the client. Entries left of it were written by the client itself and are never believed.
 */
export function createClientAddress(
  trust: TrustProxy,
): (peer: string, forwardedFor: string | undefined) => string {
  const trusted = trustFunction(trust);
  if (!trusted) return (peer) => peer;
  return (peer, forwardedFor) => {
    if (!forwardedFor || !trusted(peer, 0)) return peer;
    const entries = forwardedFor.split(',');
    let client = peer;
    for (let hop = 1, index = entries.length - 1; index >= 0; hop++, index--) {
      const entry = entries[index]!.trim();
      if (isIP(unmapped(entry)) === 0) return client;
      client = entry;
      if (!trusted(entry, hop)) return client;
    }
    return client;
  };
}

/**
 * Whether the hop-th address from the right (0: the socket's peer) is a trusted proxy; false when none is.
 * Also Fastify's `trustProxy`, so that `request.ip` and the chat endpoint agree.
 */
export function trustFunction(trust: TrustProxy): false | ((address: string, hop: number) => boolean) {
  if (trust === false) return false;
  return typeof trust === 'number' ? (_address, hop) => hop < trust : listTrust(trust);
}

function listTrust(cidrs: readonly string[]): (address: string) => boolean {
  const list = new BlockList();
  for (const cidr of cidrs) {
    const [network = '', bits] = cidr.split('/');
    const family = isIP(network) === 4 ? 'ipv4' : 'ipv6';
    list.addSubnet(network, bits === undefined ? (family === 'ipv4' ? 32 : 128) : Number(bits), family);
  }
  return (address) => {
    const ip = unmapped(address);
    const family = isIP(ip);
    return family !== 0 && list.check(ip, family === 4 ? 'ipv4' : 'ipv6');
  };
}

/** An IPv4-mapped IPv6 address as its IPv4 address. */
const unmapped = (address: string): string =>
  address.startsWith('::ffff:') && isIP(address.slice(7)) === 4 ? address.slice(7) : address;
