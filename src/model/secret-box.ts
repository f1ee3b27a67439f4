import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes } from 'node:crypto';
import { chmodSync, closeSync, mkdirSync, openSync, readFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { BerthError } from '../core/index.js';

/**
 * A secret as the server stores it: the AES-256-GCM ciphertext (`sealed`) and a keyed digest of
 * the value (`digest`), which says whether two deploys carry the same value (so an unchanged
 * secret does not roll its service) without anyone being able to test guesses against it.
 */
export interface SealedSecret {
  readonly sealed: string;
  readonly digest: string;
}

/** Where the server keeps its secret key: one file beside its database, readable by root only. */
export const secretKeyFileName = 'secrets.key';

const keyBytes = 32;
const ivBytes = 12;
const tagBytes = 16;
const format = 'v1';

/**
 * Seals and opens the secrets of system definitions with one key per server data dir. The key is
 * created (mode 0600) the first time a server needs it; losing it loses every stored secret,
 * which is why it lives with the database it protects (a backup of one needs the other).
 */
export class SecretBox {
  readonly #encryptionKey: Buffer;
  readonly #digestKey: Buffer;

  constructor(key: Buffer) {
    if (key.length !== keyBytes)
      throw new BerthError('internal', `a secret key is ${keyBytes} bytes, this one is ${key.length}`);
    // Two keys from one: the digest never uses the encryption key itself.
    this.#encryptionKey = Buffer.from(hkdfSync('sha256', key, '', 'berth secret encryption', keyBytes));
    this.#digestKey = Buffer.from(hkdfSync('sha256', key, '', 'berth secret digest', keyBytes));
  }

  /** The box of a data dir, creating its key file on first use (exclusive create: two servers agree). */
  static forDataDir(dataDir: string): SecretBox {
    const path = join(dataDir, secretKeyFileName);
    mkdirSync(dataDir, { recursive: true });
    try {
      const fd = openSync(path, 'wx', 0o600);
      try {
        writeSync(fd, randomBytes(keyBytes));
      } finally {
        closeSync(fd);
      }
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    // A key file copied in by hand keeps whatever mode it came with: tighten it.
    chmodSync(path, 0o600);
    return new SecretBox(readFileSync(path));
  }

  /** Seals `value` for the secret `name` (the name is authenticated: a ciphertext cannot be moved to another name). */
  seal(name: string, value: string): SealedSecret {
    const iv = randomBytes(ivBytes);
    const cipher = createCipheriv('aes-256-gcm', this.#encryptionKey, iv);
    cipher.setAAD(Buffer.from(name, 'utf8'));
    const body = Buffer.concat([cipher.update(value, 'utf8'), cipher.final()]);
    const sealed = `${format}:${Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64')}`;
    return { sealed, digest: this.digest(name, value) };
  }

  /** The value of a sealed secret; a ciphertext of another key, name or a damaged one is refused. */
  open(name: string, secret: SealedSecret): string {
    const [version, data] = secret.sealed.split(':', 2);
    const raw = Buffer.from(data ?? '', 'base64');
    if (version !== format || raw.length < ivBytes + tagBytes)
      throw new BerthError('internal', `secret ${name} is not sealed in a form this server reads`, { name });
    const decipher = createDecipheriv('aes-256-gcm', this.#encryptionKey, raw.subarray(0, ivBytes));
    decipher.setAAD(Buffer.from(name, 'utf8'));
    decipher.setAuthTag(raw.subarray(ivBytes, ivBytes + tagBytes));
    try {
      return Buffer.concat([decipher.update(raw.subarray(ivBytes + tagBytes)), decipher.final()]).toString(
        'utf8',
      );
    } catch {
      // catch-all: GCM's only failure is a tag mismatch; the message must not echo anything of the value.
      throw new BerthError(
        'internal',
        `secret ${name} cannot be opened: sealed with another key (was ${secretKeyFileName} replaced?) or damaged`,
        { name },
      );
    }
  }

  /** A keyed digest of (name, value): equal for equal values, useless without the key. */
  digest(name: string, value: string): string {
    return createHmac('sha256', this.#digestKey).update(`${name}\0${value}`).digest('hex').slice(0, 32);
  }
}
