/*
 * C2SP signed notes with Ed25519 keys, and the tlog-checkpoint body they
 * carry (DESIGN 4.4). Formats as in C2SP signed-note and Go's
 * golang.org/x/mod/sumdb/note, so that their tools read ours:
 *
 *   verifier key  <name>+<8 hex key ID>+<base64(0x01 || public key)>
 *   signer key    PRIVATE+KEY+<name>+<8 hex key ID>+<base64(0x01 || seed)>
 *   key ID        first 4 bytes (big endian) of
 *                 SHA-256(name || 0x0A || 0x01 || public key)
 *   note          text (ends in \n), an empty line, then signature lines
 *                 "\xe2\x80\x94 <name> <base64(key ID || signature)>\n"
 *
 * A verifier ignores signature lines of keys it does not know (witness
 * cosignatures) and rejects a note that no known key verifies, or that a
 * known key's line fails to verify. Signing is deterministic (Ed25519), so
 * it is pure; making a key needs randomness and lives in tools/.
 */
#include "model/model_int.h"

#include <openssl/evp.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ALG_ED25519 0x01
static const char sig_prefix[] = "\xe2\x80\x94 "; /* em dash, space */

/* ---------------------------------------------------------------------- */
/* Base64 (RFC 4648, standard alphabet, padded; decoding is strict) */

static const char b64[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t note_b64_encode(const uint8_t *in, size_t n, char *out)
{
	size_t o = 0;

	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)in[i] << 16;

		if (i + 1 < n)
			v |= (uint32_t)in[i + 1] << 8;
		if (i + 2 < n)
			v |= in[i + 2];
		out[o++] = b64[v >> 18];
		out[o++] = b64[(v >> 12) & 63];
		out[o++] = i + 1 < n ? b64[(v >> 6) & 63] : '=';
		out[o++] = i + 2 < n ? b64[v & 63] : '=';
	}
	out[o] = '\0';
	return o;
}

static int b64_val(char c)
{
	const char *p = c ? strchr(b64, c) : NULL;

	return p ? (int)(p - b64) : -1;
}

int note_b64_decode(const char *in, size_t n, uint8_t *out, size_t cap,
		    size_t *len)
{
	size_t o = 0;

	if (n % 4 != 0)
		return LG_EINVAL;
	for (size_t i = 0; i < n; i += 4) {
		int a = b64_val(in[i]), b = b64_val(in[i + 1]);
		int c = in[i + 2] == '=' ? -2 : b64_val(in[i + 2]);
		int d = in[i + 3] == '=' ? -2 : b64_val(in[i + 3]);
		uint32_t v;
		bool last = i + 4 == n;

		if (a < 0 || b < 0 || c == -1 || d == -1 ||
		    ((c == -2 || d == -2) && !last) || (c == -2 && d != -2))
			return LG_EINVAL;
		v = (uint32_t)a << 18 | (uint32_t)b << 12 |
		    (uint32_t)(c < 0 ? 0 : c) << 6 | (uint32_t)(d < 0 ? 0 : d);
		/* Non-canonical padding bits are refused. */
		if ((c == -2 && (v & 0xFFFF)) || (d == -2 && (v & 0xFF)))
			return LG_EINVAL;
		if (o + 1 + (c >= 0) + (d >= 0) > cap)
			return LG_ERANGE;
		out[o++] = (uint8_t)(v >> 16);
		if (c >= 0)
			out[o++] = (uint8_t)(v >> 8);
		if (d >= 0)
			out[o++] = (uint8_t)v;
	}
	*len = o;
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Keys */

static bool name_ok(const char *s, size_t n)
{
	if (n == 0 || n > NOTE_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] <= ' ' || s[i] == '+' ||
		    (unsigned char)s[i] == 0x7f)
			return false;
	return true;
}

static uint32_t key_id(const char *name, const uint8_t *pub)
{
	uint8_t md[SHA256_DIGEST_LENGTH];
	size_t n = strlen(name);
	uint8_t *buf = lg_xmalloc(n + 2 + NOTE_KEY_BYTES);

	memcpy(buf, name, n);
	buf[n] = '\n';
	buf[n + 1] = ALG_ED25519;
	memcpy(buf + n + 2, pub, NOTE_KEY_BYTES);
	SHA256(buf, n + 2 + NOTE_KEY_BYTES, md);
	free(buf);
	return (uint32_t)md[0] << 24 | (uint32_t)md[1] << 16 |
	       (uint32_t)md[2] << 8 | md[3];
}

/* Parses "<name>+<hex8>+<base64(0x01 || 32 bytes)>" (the name may not
 * hold '+'; the base64 may). */
static int parse_key(const char *s, char *name, uint32_t *id, uint8_t *key,
		     struct lg_error *err)
{
	const char *p1 = strchr(s, '+'), *p2;
	uint8_t raw[64];
	size_t rl, n = strlen(s);
	char *end;
	unsigned long v;

	while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r'))
		n--;
	if (p1 == NULL || (p2 = strchr(p1 + 1, '+')) == NULL ||
	    !name_ok(s, (size_t)(p1 - s)) || p2 - p1 != 9)
		return lg_error_set(err, LG_EINVAL, "malformed key");
	v = strtoul(p1 + 1, &end, 16);
	if (end != p2)
		return lg_error_set(err, LG_EINVAL, "malformed key ID");
	if (note_b64_decode(p2 + 1, n - (size_t)(p2 + 1 - s), raw, sizeof(raw),
			    &rl) != 0 ||
	    rl != 1 + NOTE_KEY_BYTES)
		return lg_error_set(err, LG_EINVAL, "malformed key material");
	if (raw[0] != ALG_ED25519)
		return lg_error_set(err, LG_EUNKNOWN,
				    "key algorithm %u is not Ed25519", raw[0]);
	memcpy(name, s, (size_t)(p1 - s));
	name[p1 - s] = '\0';
	memcpy(key, raw + 1, NOTE_KEY_BYTES);
	*id = (uint32_t)v;
	return 0;
}

int note_verifier_parse(struct note_verifier *v, const char *text,
			struct lg_error *err)
{
	int rc = parse_key(text, v->name, &v->id, v->pub, err);

	if (rc != 0)
		return rc;
	if (key_id(v->name, v->pub) != v->id)
		return lg_error_set(err, LG_EINVAL,
				    "key ID does not match the key");
	return 0;
}

static int seed_to_pub(const uint8_t *seed, uint8_t *pub)
{
	EVP_PKEY *k = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, NULL,
						   seed, NOTE_KEY_BYTES);
	size_t n = NOTE_KEY_BYTES;
	int ok = k != NULL && EVP_PKEY_get_raw_public_key(k, pub, &n) == 1 &&
		 n == NOTE_KEY_BYTES;

	EVP_PKEY_free(k);
	return ok ? 0 : LG_EINVAL;
}

int note_signer_parse(struct note_signer *s, const char *text,
		      struct lg_error *err)
{
	static const char pfx[] = "PRIVATE+KEY+";
	int rc;

	if (strncmp(text, pfx, sizeof(pfx) - 1) != 0)
		return lg_error_set(err, LG_EINVAL,
				    "not a signer key (PRIVATE+KEY+...)");
	rc = parse_key(text + sizeof(pfx) - 1, s->name, &s->id, s->seed, err);
	if (rc != 0)
		return rc;
	if (seed_to_pub(s->seed, s->pub) != 0)
		return lg_error_set(err, LG_EINVAL, "bad Ed25519 key");
	if (key_id(s->name, s->pub) != s->id)
		return lg_error_set(err, LG_EINVAL,
				    "key ID does not match the key");
	return 0;
}

int note_signer_from_seed(struct note_signer *s, const char *name,
			  const uint8_t *seed, struct lg_error *err)
{
	if (!name_ok(name, strlen(name)))
		return lg_error_set(err, LG_EINVAL,
				    "bad key name \"%s\" (no spaces or '+')",
				    name);
	strcpy(s->name, name);
	memcpy(s->seed, seed, NOTE_KEY_BYTES);
	if (seed_to_pub(seed, s->pub) != 0)
		return lg_error_set(err, LG_EINVAL, "bad Ed25519 key");
	s->id = key_id(name, s->pub);
	return 0;
}

static size_t format_key(char *out, const char *pfx, const char *name,
			 uint32_t id, const uint8_t *key)
{
	uint8_t raw[1 + NOTE_KEY_BYTES];
	size_t n = (size_t)sprintf(out, "%s%s+%08x+", pfx, name, id);

	raw[0] = ALG_ED25519;
	memcpy(raw + 1, key, NOTE_KEY_BYTES);
	return n + note_b64_encode(raw, sizeof(raw), out + n);
}

size_t note_verifier_format(const struct note_signer *s, char *out)
{
	return format_key(out, "", s->name, s->id, s->pub);
}

size_t note_signer_format(const struct note_signer *s, char *out)
{
	return format_key(out, "PRIVATE+KEY+", s->name, s->id, s->seed);
}

/* ---------------------------------------------------------------------- */
/* Signing and opening */

char *note_sign(const struct note_signer *s, const char *text)
{
	size_t n = strlen(text), sl = 64;
	uint8_t blob[4 + 64];
	EVP_PKEY *k;
	EVP_MD_CTX *ctx;
	char *out;
	int ok;

	if (n == 0 || text[n - 1] != '\n' || strstr(text, "\n\n") != NULL)
		return NULL;
	k = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, NULL, s->seed,
					 NOTE_KEY_BYTES);
	ctx = EVP_MD_CTX_new();
	ok = k != NULL && ctx != NULL &&
	     EVP_DigestSignInit(ctx, NULL, NULL, NULL, k) == 1 &&
	     EVP_DigestSign(ctx, blob + 4, &sl, (const uint8_t *)text, n) == 1;
	EVP_MD_CTX_free(ctx);
	EVP_PKEY_free(k);
	if (!ok)
		return NULL;
	blob[0] = (uint8_t)(s->id >> 24);
	blob[1] = (uint8_t)(s->id >> 16);
	blob[2] = (uint8_t)(s->id >> 8);
	blob[3] = (uint8_t)s->id;
	out = lg_xmalloc(n + 1 + sizeof(sig_prefix) + strlen(s->name) + 1 + 96 +
			 2);
	n = (size_t)sprintf(out, "%s\n%s%s ", text, sig_prefix, s->name);
	n += note_b64_encode(blob, sizeof(blob), out + n);
	strcpy(out + n, "\n");
	return out;
}

static bool ed25519_ok(const uint8_t *pub, const uint8_t *sig, const char *msg,
		       size_t n)
{
	EVP_PKEY *k = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, NULL, pub,
						  NOTE_KEY_BYTES);
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	bool ok = k != NULL && ctx != NULL &&
		  EVP_DigestVerifyInit(ctx, NULL, NULL, NULL, k) == 1 &&
		  EVP_DigestVerify(ctx, sig, 64, (const uint8_t *)msg, n) == 1;

	EVP_MD_CTX_free(ctx);
	EVP_PKEY_free(k);
	return ok;
}

/* Checks one signature line [p, e) (without its \n) against the known
 * keys: 1 verified, 0 unknown key, <0 bad. */
static int check_line(const char *p, const char *e, const char *text,
		      size_t tlen, const struct note_verifier *vs, size_t nv,
		      const char **who)
{
	const char *sp;
	uint8_t blob[4 + 64 + 8];
	size_t bl, nl;
	uint32_t id;

	if ((size_t)(e - p) < sizeof(sig_prefix) - 1 ||
	    memcmp(p, sig_prefix, sizeof(sig_prefix) - 1) != 0)
		return -1;
	p += sizeof(sig_prefix) - 1;
	sp = memchr(p, ' ', (size_t)(e - p));
	if (sp == NULL || !name_ok(p, (size_t)(sp - p)))
		return -1;
	nl = (size_t)(sp - p);
	if (note_b64_decode(sp + 1, (size_t)(e - sp - 1), blob, sizeof(blob),
			    &bl) != 0 ||
	    bl < 4)
		return -1;
	id = (uint32_t)blob[0] << 24 | (uint32_t)blob[1] << 16 |
	     (uint32_t)blob[2] << 8 | blob[3];
	for (size_t i = 0; i < nv; i++) {
		if (vs[i].id != id || strlen(vs[i].name) != nl ||
		    memcmp(vs[i].name, p, nl) != 0)
			continue;
		*who = vs[i].name;
		if (bl != 4 + 64 || !ed25519_ok(vs[i].pub, blob + 4, text, tlen))
			return -2;
		return 1;
	}
	return 0;
}

int note_open(const char *msg, size_t len, const struct note_verifier *vs,
	      size_t nv, size_t *text_len, struct lg_error *err)
{
	const char *sep = NULL, *p, *who = NULL;
	int verified = 0;

	if (len > NOTE_MAX_BYTES)
		return lg_error_set(err, LG_ELIMIT, "note longer than %u bytes",
				    NOTE_MAX_BYTES);
	if (memchr(msg, '\0', len) != NULL)
		return lg_error_set(err, LG_EINVAL, "note holds a NUL byte");
	/* The text ends at the last blank line. */
	for (size_t i = 0; i + 1 < len; i++)
		if (msg[i] == '\n' && msg[i + 1] == '\n')
			sep = msg + i;
	if (sep == NULL || len == 0 || msg[len - 1] != '\n')
		return lg_error_set(err, LG_EINVAL,
				    "not a signed note (no signature block)");
	for (p = sep + 2; p < msg + len;) {
		const char *e = memchr(p, '\n', (size_t)(msg + len - p));
		int r = check_line(p, e, msg, (size_t)(sep + 1 - msg), vs, nv,
				   &who);

		if (r == -1)
			return lg_error_set(err, LG_EINVAL,
					    "malformed signature line");
		if (r == -2)
			return lg_error_set(err, LG_EMISMATCH,
					    "the signature of %s does not "
					    "verify",
					    who);
		verified += r;
		p = e + 1;
	}
	if (verified == 0)
		return lg_error_set(err, LG_EMISMATCH,
				    "no known key signed this note");
	*text_len = (size_t)(sep + 1 - msg);
	return 0;
}

/* ---------------------------------------------------------------------- */
/* tlog-checkpoint */

char *tlog_checkpoint_text(const char *origin, uint64_t size,
			   const uint8_t *root)
{
	char r64[48];
	char *out = lg_xmalloc(strlen(origin) + 80);

	note_b64_encode(root, MERKLE_HASH_BYTES, r64);
	sprintf(out, "%s\n%llu\n%s\n", origin, (unsigned long long)size, r64);
	return out;
}

int tlog_checkpoint_parse(const char *text, size_t len, char *origin,
			  uint64_t *size, uint8_t *root, struct lg_error *err)
{
	const char *l1 = memchr(text, '\n', len), *l2, *l3;
	size_t rl;
	char *end;

	if (l1 == NULL || (l2 = memchr(l1 + 1, '\n', len - (size_t)(l1 + 1 -
								     text))) ==
				  NULL ||
	    (l3 = memchr(l2 + 1, '\n', len - (size_t)(l2 + 1 - text))) == NULL)
		return lg_error_set(err, LG_EINVAL,
				    "checkpoint: fewer than three lines");
	if (l1 == text || (size_t)(l1 - text) > NOTE_NAME_MAX)
		return lg_error_set(err, LG_EINVAL, "checkpoint: bad origin");
	memcpy(origin, text, (size_t)(l1 - text));
	origin[l1 - text] = '\0';
	if (l1[1] < '0' || l1[1] > '9' || (l1[1] == '0' && l2 - l1 != 2))
		return lg_error_set(err, LG_EINVAL, "checkpoint: bad size");
	*size = strtoull(l1 + 1, &end, 10);
	if (end != l2 || l2 - l1 > 21)
		return lg_error_set(err, LG_EINVAL, "checkpoint: bad size");
	if (note_b64_decode(l2 + 1, (size_t)(l3 - l2 - 1), root, 32, &rl) != 0 ||
	    rl != MERKLE_HASH_BYTES)
		return lg_error_set(err, LG_EINVAL,
				    "checkpoint: bad root hash");
	return 0;
}
