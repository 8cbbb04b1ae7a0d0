import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

/** Seals short secrets for storage (AES-256-GCM) and opens what it or an earlier key sealed. */
export interface SecretBox {
  /** `enc:v1:<key id>:<iv>:<tag>:<ciphertext>`, or the text itself when no key is configured. */
  seal(plain: string): string;
  /** The stored value's plaintext; a value stored before encryption was on is returned as it is. */
  open(stored: string): string;
  /** Whether a stored value is plaintext or sealed with an older key (to be sealed again). */
  stale(stored: string): boolean;
  /** The sealed formats it opens, by name (`secret:enc-v1:<key id>`): an instance's lease lists them. */
  readonly opens: readonly string[];
  /** The format `seal` writes (undefined: plaintext, which every release reads). */
  readonly sealsAs: string | undefined;
}

/** The name of the format a key seals: readers list it when they hold the key. */
const formatOf = (keyId: string): string => `secret:enc-v1:${keyId}`;

/**
 * The box, sealing only while `allowed(format)` says every live instance opens that format; otherwise new
 * secrets are stored as plaintext (which every release reads) and nothing counts as stale.
 */
export function gatedSecretBox(box: SecretBox, allowed: (format: string) => boolean): SecretBox {
  const open = (): boolean => box.sealsAs !== undefined && allowed(box.sealsAs);
  return {
    seal: (plain) => (open() ? box.seal(plain) : plain),
    open: (stored) => box.open(stored),
    stale: (stored) => open() && box.stale(stored),
    opens: box.opens,
    sealsAs: box.sealsAs,
  };
}

const PREFIX = 'enc:v1:';

/** A box over TOLLGATE_SECRET_KEY (seals) and TOLLGATE_SECRET_KEY_PREVIOUS (still opens); none: plaintext. */
export function createSecretBox(
  keys: { current: string; previous: readonly string[] } | undefined,
): SecretBox {
  if (!keys) {
    return {
      seal: (plain) => plain,
      open: (stored) => {
        if (stored.startsWith(PREFIX))
          throw new Error('a stored secret is encrypted, but TOLLGATE_SECRET_KEY is not set');
        return stored;
      },
      stale: () => false,
      opens: [],
      sealsAs: undefined,
    };
  }
  const derive = (secret: string) => ({
    id: createHash('sha256').update(`tollgate key id:${secret}`).digest('hex').slice(0, 8),
    key: createHash('sha256').update(secret).digest(),
  });
  const current = derive(keys.current);
  const known = new Map([current, ...keys.previous.map(derive)].map((entry) => [entry.id, entry.key]));
  return {
    seal(plain) {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', current.key, iv);
      const sealed = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
      const parts = [iv, cipher.getAuthTag(), sealed].map((part) => part.toString('base64url'));
      return `${PREFIX}${current.id}:${parts.join(':')}`;
    },
    open(stored) {
      if (!stored.startsWith(PREFIX)) return stored;
      const [id = '', iv = '', tag = '', sealed = ''] = stored.slice(PREFIX.length).split(':');
      const key = known.get(id);
      if (!key) throw new Error(`a stored secret is sealed with key ${id}, which is not configured`);
      const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
      decipher.setAuthTag(Buffer.from(tag, 'base64url'));
      return Buffer.concat([decipher.update(Buffer.from(sealed, 'base64url')), decipher.final()]).toString(
        'utf8',
      );
    },
    stale: (stored) => !stored.startsWith(`${PREFIX}${current.id}:`),
    opens: [...known.keys()].map(formatOf),
    sealsAs: formatOf(current.id),
  };
}
