import { createPrivateKey, type KeyObject } from 'node:crypto';

/**
 * An RSA private key in any form a provider's key tool hands out: PEM, or the bare base64 of
 * PKCS#8 or PKCS#1 DER (Alipay's). Shared by the Alipay adapter and its development double.
 */
export function rsaPrivateKey(key: string, name: string): KeyObject {
  if (key.includes('-----BEGIN')) return createPrivateKey(key);
  const der = Buffer.from(key.replace(/\s+/g, ''), 'base64');
  for (const type of ['pkcs8', 'pkcs1'] as const) {
    try {
      return createPrivateKey({ key: der, format: 'der', type });
    } catch {
      // try the other encoding
    }
  }
  throw new Error(`${name} is not an RSA private key (PEM or base64 PKCS#8/PKCS#1)`);
}
