/** A change other instances must hear about: drop cached keys of an account or of one key. */
export interface InvalidationMessage {
  accountId?: string;
  keyId?: string;
}

/** Carries invalidations to every instance, this one included. */
export interface Bus {
  publish(message: InvalidationMessage): Promise<void>;
  subscribe(handler: (message: InvalidationMessage) => void): void;
  close(): Promise<void>;
}

/** One instance: a publish reaches this process's subscribers at once. */
export function createLocalBus(): Bus {
  const handlers: ((message: InvalidationMessage) => void)[] = [];
  return {
    async publish(message) {
      for (const handler of handlers) handler(message);
    },
    subscribe(handler) {
      handlers.push(handler);
    },
    async close() {},
  };
}
