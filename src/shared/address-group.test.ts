import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { addressGroup } from './address-group.ts';

describe('addressGroup', () => {
  it('an IPv4 address is its own group, mapped or not', () => {
    assert.equal(addressGroup('203.0.113.7'), '203.0.113.7');
    assert.equal(addressGroup('::ffff:203.0.113.7'), '203.0.113.7');
  });

  it('IPv6 addresses group by their /64, however they are written', () => {
    const group = '2001:db8:0:1::/64';
    for (const ip of [
      '2001:db8:0:1::1',
      '2001:db8:0:1:ffff:ffff:ffff:ffff',
      '2001:0DB8:0000:0001:0:0:0:2',
      '2001:db8::1:0:0:0:3',
      '2001:db8:0:1::5%eth0',
      '2001:db8:0:1::192.0.2.1',
    ])
      assert.equal(addressGroup(ip), group, ip);
    assert.notEqual(addressGroup('2001:db8:0:2::1'), group);
    assert.equal(addressGroup('::1'), '0:0:0:0::/64');
  });

  it('anything that is not an address stays as it is', () => {
    assert.equal(addressGroup(''), '');
    assert.equal(addressGroup('unix-socket'), 'unix-socket');
  });
});
