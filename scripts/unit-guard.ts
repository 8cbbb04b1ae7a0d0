// Loaded ahead of the unit tier (scripts/test.ts --unit): a unit test that opens a socket, listens on a port or
// starts a process fails here, naming what it did. Such a test belongs to the integration tier in test/.
import childProcess from 'node:child_process';
import { syncBuiltinESMExports } from 'node:module';
import net from 'node:net';

function refuse(what: string): never {
  throw new Error(
    `the unit tier opens no sockets and starts no processes (${what}): move this test to test/`,
  );
}

net.Server.prototype.listen = function listen(): never {
  refuse('net.Server.listen');
};
net.Socket.prototype.connect = function connect(): never {
  refuse('net.Socket.connect');
};
for (const name of ['spawn', 'spawnSync', 'fork', 'exec', 'execSync', 'execFile', 'execFileSync'] as const) {
  Object.defineProperty(childProcess, name, { value: () => refuse(`child_process.${name}`) });
}
syncBuiltinESMExports();
