import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto';

import { StoreError } from '../core/store-error.js';

/** Marks an encrypted column value: `enc1:<key id>:<base64url(iv ‖ ciphertext ‖ tag)>`. JSON text never starts like this. */
const PREFIX = 'enc1:';
const IV_BYTES = 12;
const TAG_BYTES = 16;
const KEY_BYTES = 32;
/** What a requestor sees of a value this process cannot decrypt (the key id and the remedy are the operator's, in the log). */
const UNDECRYPTABLE = "This server cannot decrypt this task's stored data";

/**
 * Encrypts the column values that can hold requestors' data (tool arguments, input requests and answers, journaled
 * steps) before a store writes them, and decrypts them on read. `context` names the column and row (e.g.
 * `tasks.arguments|<taskId>`); it is authenticated with the value, so a value copied into another row or column
 * does not decrypt.
 */
export interface FieldCipher {
  /** The encrypted form of `plaintext` for `context`. */
  seal(plaintext: string, context: string): string;
  /**
   * The plaintext of a stored value. A value without the `enc1:` prefix (written before encryption was turned on)
   * is returned as it is.
   * @throws StoreError `fault` naming the key id when no configured key fits or the value does not authenticate.
   */
  open(stored: string, context: string): string;
}

/** The key id stored with each value: 8 bytes of HMAC-SHA256(key, "mcp-tasks key id"), hex (reveals nothing of the key). */
export function keyIdOf(key: Buffer): string {
  return createHmac('sha256', key).update('mcp-tasks key id').digest('hex').slice(0, 16);
}

/**
 * A 32-byte key from its text form: 64 hex digits or base64 / base64url of 32 bytes (`openssl rand -base64 32`).
 * @throws Error saying what is expected (never echoing the value).
 */
export function parseEncryptionKey(text: string, what: string): Buffer {
  const trimmed = text.trim();
  const key = /^[0-9a-fA-F]{64}$/.test(trimmed)
    ? Buffer.from(trimmed, 'hex')
    : /^[A-Za-z0-9+/_-]{43}=?$/.test(trimmed)
      ? Buffer.from(trimmed, 'base64')
      : undefined;
  if (key?.length !== KEY_BYTES) throw new Error(`${what} must be 32 bytes as 64 hex digits or base64 (e.g. openssl rand -base64 32)`);
  return key;
}

/** The plaintext-passing cipher when encryption is off: writes plaintext, and refuses to read encrypted values. */
export const NO_ENCRYPTION: FieldCipher = {
  seal: (plaintext) => plaintext,
  open(stored) {
    if (!stored.startsWith(PREFIX)) return stored;
    const keyId = stored.slice(PREFIX.length).split(':', 1)[0];
    throw new StoreError('fault', `the task store holds encrypted data (key id ${keyId}) but no encryption key is set (MCP_TASKS_ENCRYPTION_KEY)`, {
      requestorMessage: UNDECRYPTABLE,
    });
  },
};

/**
 * AES-256-GCM per value (node:crypto): a fresh 96-bit IV each time, the 128-bit tag appended, the context as
 * additional authenticated data, the key id in clear so that several keys can be read. Writes use the current
 * key; reads use whichever configured key the value names, so keys rotate without rewriting rows (old rows
 * expire with their tasks).
 */
export class AesGcmFieldCipher implements FieldCipher {
  private readonly currentId: string;
  private readonly keys: ReadonlyMap<string, Buffer>;

  /** @param old - keys that only decrypt (values written before a rotation). */
  constructor(
    private readonly current: Buffer,
    old: readonly Buffer[] = [],
  ) {
    for (const key of [current, ...old]) if (key.length !== KEY_BYTES) throw new Error('an AES-256-GCM key is 32 bytes');
    this.currentId = keyIdOf(current);
    this.keys = new Map([...old, current].map((key) => [keyIdOf(key), key]));
  }

  /**
   * The cipher of `MCP_TASKS_ENCRYPTION_KEY` (current) and `MCP_TASKS_ENCRYPTION_KEYS_OLD` (comma-separated, read
   * only), or {@link NO_ENCRYPTION} when the first is unset or empty.
   * @throws Error for a malformed key, or old keys without a current one.
   */
  static fromEnvironment(env: NodeJS.ProcessEnv): FieldCipher {
    const current = env.MCP_TASKS_ENCRYPTION_KEY;
    const old = (env.MCP_TASKS_ENCRYPTION_KEYS_OLD ?? '')
      .split(',')
      .map((key) => key.trim())
      .filter((key) => key.length > 0);
    if (current === undefined || current.trim().length === 0) {
      if (old.length > 0) throw new Error('MCP_TASKS_ENCRYPTION_KEYS_OLD needs MCP_TASKS_ENCRYPTION_KEY (the key new values are written with)');
      return NO_ENCRYPTION;
    }
    return new AesGcmFieldCipher(
      parseEncryptionKey(current, 'MCP_TASKS_ENCRYPTION_KEY'),
      old.map((key, index) => parseEncryptionKey(key, `MCP_TASKS_ENCRYPTION_KEYS_OLD entry ${index + 1}`)),
    );
  }

  /** The id of the key new values are written with (for the start-up banner). */
  get keyId(): string {
    return this.currentId;
  }

  /** Every key id of `cipher` (none for {@link NO_ENCRYPTION}); never the keys. */
  static keyIdsOf(cipher: FieldCipher): { current: string | null; readOnly: string[] } {
    return cipher instanceof AesGcmFieldCipher ? { current: cipher.keyId, readOnly: cipher.readOnlyKeyIds } : { current: null, readOnly: [] };
  }

  /** The ids of the keys that only decrypt (`MCP_TASKS_ENCRYPTION_KEYS_OLD`), sorted; never the keys. */
  get readOnlyKeyIds(): string[] {
    return [...this.keys.keys()].filter((id) => id !== this.currentId).sort();
  }

  seal(plaintext: string, context: string): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.current, iv, { authTagLength: TAG_BYTES });
    cipher.setAAD(Buffer.from(context, 'utf8'));
    const body = Buffer.concat([iv, cipher.update(plaintext, 'utf8'), cipher.final(), cipher.getAuthTag()]);
    return `${PREFIX}${this.currentId}:${body.toString('base64url')}`;
  }

  open(stored: string, context: string): string {
    if (!stored.startsWith(PREFIX)) return stored;
    const rest = stored.slice(PREFIX.length);
    const colon = rest.indexOf(':');
    const keyId = colon < 0 ? '' : rest.slice(0, colon);
    const key = this.keys.get(keyId);
    if (!key)
      throw new StoreError('fault', `cannot decrypt task data: key id ${keyId || '(none)'} is not configured (add its key to MCP_TASKS_ENCRYPTION_KEYS_OLD)`, {
        requestorMessage: UNDECRYPTABLE,
      });
    const body = Buffer.from(rest.slice(colon + 1), 'base64url');
    try {
      if (body.length < IV_BYTES + TAG_BYTES) throw new Error('too short');
      const decipher = createDecipheriv('aes-256-gcm', key, body.subarray(0, IV_BYTES), { authTagLength: TAG_BYTES });
      decipher.setAAD(Buffer.from(context, 'utf8'));
      decipher.setAuthTag(body.subarray(body.length - TAG_BYTES));
      return Buffer.concat([decipher.update(body.subarray(IV_BYTES, body.length - TAG_BYTES)), decipher.final()]).toString('utf8');
    } catch (error) {
      throw new StoreError('fault', `cannot decrypt task data with key id ${keyId}: the value does not authenticate (corrupted, or moved from another row)`, {
        cause: error,
        requestorMessage: UNDECRYPTABLE,
      });
    }
  }
}
