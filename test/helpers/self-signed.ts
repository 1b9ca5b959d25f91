/**
 * Self-signed X.509 certificates for TLS tests, made with node:crypto alone: an ECDSA P-256 key, a DER-encoded
 * v3 certificate (subjectAltName for the loopback names, basicConstraints CA so that it can be its own trust
 * anchor) signed with SHA-256, and its PEM. Validity dates are the caller's, so a test can serve a certificate
 * that expires in three days or has expired.
 */
import { generateKeyPairSync, randomBytes, sign, X509Certificate } from 'node:crypto';

/** DER: tag, length, content. */
function der(tag: number, ...parts: Buffer[]): Buffer {
  const content = Buffer.concat(parts);
  const length = content.length;
  const header =
    length < 0x80 ? Buffer.from([tag, length]) : length < 0x100 ? Buffer.from([tag, 0x81, length]) : Buffer.from([tag, 0x82, length >> 8, length & 0xff]);
  return Buffer.concat([header, content]);
}

const sequence = (...parts: Buffer[]) => der(0x30, ...parts);
const set = (...parts: Buffer[]) => der(0x31, ...parts);
const oid = (dotted: string): Buffer => {
  const [a, b, ...rest] = dotted.split('.').map(Number) as number[];
  const bytes = [40 * (a as number) + (b as number)];
  for (const value of rest) {
    const chunk: number[] = [];
    let v = value;
    do {
      chunk.unshift(v & 0x7f);
      v >>= 7;
    } while (v > 0);
    for (let i = 0; i < chunk.length - 1; i++) chunk[i] = (chunk[i] as number) | 0x80;
    bytes.push(...chunk);
  }
  return der(0x06, Buffer.from(bytes));
};
const utf8 = (text: string) => der(0x0c, Buffer.from(text, 'utf8'));
/** UTCTime until 2049, GeneralizedTime after (RFC 5280). */
const time = (date: Date): Buffer => {
  const iso = date.toISOString().replace(/[-:T]/g, '').slice(0, 14);
  return date.getUTCFullYear() < 2050 ? der(0x17, Buffer.from(`${iso.slice(2)}Z`)) : der(0x18, Buffer.from(`${iso}Z`));
};
const name = (commonName: string) => sequence(set(sequence(oid('2.5.4.3'), utf8(commonName))));
const ECDSA_SHA256 = sequence(oid('1.2.840.10045.4.3.2'));

/** Options of {@link selfSignedCertificate}. */
export interface CertificateOptions {
  commonName?: string;
  notBefore?: Date;
  notAfter: Date;
  /** subjectAltName IP addresses (IPv4) and DNS names. */
  ips?: string[];
  dnsNames?: string[];
}

/** A key and its self-signed certificate, both PEM. */
export function selfSignedCertificate(options: CertificateOptions): { key: string; cert: string; x509: X509Certificate } {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  // A DER INTEGER is minimal and positive: a first byte of 0x00 (then < 0x80) is "illegal padding" to OpenSSL, one
  // of 0x80 or more is negative. Random bytes gave the first about once in 512 certificates (a CI run failed on it).
  const serial = randomBytes(8);
  serial[0] = ((serial[0] as number) % 0x7f) + 1;
  serial[0] = (serial[0] as number) & 0x7f;
  const altNames = [
    ...(options.dnsNames ?? ['localhost']).map((dns) => der(0x82, Buffer.from(dns))),
    ...(options.ips ?? ['127.0.0.1']).map((ip) => der(0x87, Buffer.from(ip.split('.').map(Number)))),
  ];
  const extensions = der(
    0xa3,
    sequence(
      sequence(oid('2.5.29.17'), der(0x04, sequence(...altNames))),
      // basicConstraints CA:TRUE, critical: a self-signed certificate that may be its own trust anchor.
      sequence(oid('2.5.29.19'), der(0x01, Buffer.from([0xff])), der(0x04, sequence(der(0x01, Buffer.from([0xff]))))),
    ),
  );
  const subject = name(options.commonName ?? 'mcp-tasks test');
  const tbs = sequence(
    der(0xa0, der(0x02, Buffer.from([2]))),
    der(0x02, serial),
    ECDSA_SHA256,
    subject,
    sequence(time(options.notBefore ?? new Date(Date.now() - 86_400_000)), time(options.notAfter)),
    subject,
    publicKey.export({ type: 'spki', format: 'der' }),
    extensions,
  );
  const signature = sign('sha256', tbs, privateKey);
  const certificate = sequence(tbs, ECDSA_SHA256, der(0x03, Buffer.concat([Buffer.from([0]), signature])));
  const body = certificate.toString('base64').replace(/.{64}/g, '$&\n').replace(/\n$/, '');
  const cert = `-----BEGIN CERTIFICATE-----\n${body}\n-----END CERTIFICATE-----\n`;
  return { key: privateKey.export({ type: 'pkcs8', format: 'pem' }) as string, cert, x509: new X509Certificate(cert) };
}
