/*
 * Names (DESIGN 5.4, 5.5) and the tenant tree by name (DESIGN 2.1, 2.2).
 *
 * Lengths are always given explicitly: a NUL or a newline inside a name is
 * just another invalid character, never the end of the name.
 */
#include "model/model_int.h"

#include <openssl/sha.h>
#include <string.h>

#define VMI_PREFIX    "vm-instance-"
#define TENANT_ROOT   "tenant-root"
#define TENANT_PREFIX "tenant-"
/* First 8 hex digits of SHA-256, as DESIGN 5.5 fixes. */
#define CLAIM_HASH_LEN 8

/* Character classes of the DNS-1123 patterns, one table lookup a byte. A
 * NUL, like every byte not listed, is class 0: invalid. */
enum {
	C_ALNUM = 1,
	C_DASH = 2,
	C_DOT = 4
};

/* clang-format off */
#define A C_ALNUM
static const unsigned char dns_class[256] = {
	['a'] = A, ['b'] = A, ['c'] = A, ['d'] = A, ['e'] = A, ['f'] = A, ['g'] = A,
	['h'] = A, ['i'] = A, ['j'] = A, ['k'] = A, ['l'] = A, ['m'] = A, ['n'] = A,
	['o'] = A, ['p'] = A, ['q'] = A, ['r'] = A, ['s'] = A, ['t'] = A, ['u'] = A,
	['v'] = A, ['w'] = A, ['x'] = A, ['y'] = A, ['z'] = A,
	['0'] = A, ['1'] = A, ['2'] = A, ['3'] = A, ['4'] = A, ['5'] = A, ['6'] = A,
	['7'] = A, ['8'] = A, ['9'] = A,
	['-'] = C_DASH,
	['.'] = C_DOT,
};
#undef A
/* clang-format on */

static unsigned cls_of(const char *s, size_t i)
{
	return dns_class[(unsigned char)s[i]];
}

/* The label pattern [a-z0-9]([-a-z0-9]*[a-z0-9])?, at most 63 bytes:
 * alphanumeric at both ends, dashes allowed inside. */
bool dns1123_label(const char *s, size_t len)
{
	if (s == NULL || len == 0 || len > DNS1123_LABEL_MAX ||
	    cls_of(s, 0) != C_ALNUM || cls_of(s, len - 1) != C_ALNUM)
		return false;
	for (size_t i = 1; i + 1 < len; i++)
		if ((cls_of(s, i) & (C_ALNUM | C_DASH)) == 0)
			return false;
	return true;
}

/* Labels joined by dots; upstream's IsDNS1123Subdomain checks only the 253
 * total, nothing per label. In one pass: every byte alphanumeric, dash or
 * dot; the first and last alphanumeric; and both neighbours of every dot
 * alphanumeric (which also keeps labels non-empty). Each label then starts
 * and ends alphanumeric with only those and dashes inside, as the pattern
 * wants. */
bool dns1123_subdomain(const char *s, size_t len)
{
	unsigned prev = C_DOT; /* as if a dot stood before the name */

	if (s == NULL || len == 0 || len > DNS1123_SUBDOMAIN_MAX)
		return false;
	for (size_t i = 0; i < len; i++) {
		unsigned c = cls_of(s, i), pair = prev | c;

		if (c == 0 || ((pair & C_DOT) && pair != (C_DOT | C_ALNUM)))
			return false;
		prev = c;
	}
	return prev == C_ALNUM;
}

/* The same two patterns on C strings: the scan stops at the first byte of
 * class 0 (the NUL among them), which must be the terminator. */
bool model__dns1123_label_cstr(const char *s)
{
	size_t i = 0;

	if (s == NULL || cls_of(s, 0) != C_ALNUM)
		return false;
	while (i < DNS1123_LABEL_MAX && (cls_of(s, i) & (C_ALNUM | C_DASH)))
		i++;
	return s[i] == '\0' && cls_of(s, i - 1) == C_ALNUM;
}

bool model__dns1123_subdomain_cstr(const char *s)
{
	unsigned prev = C_DOT, c;
	size_t i = 0;

	if (s == NULL)
		return false;
	for (; i < DNS1123_SUBDOMAIN_MAX && (c = cls_of(s, i)) != 0; i++) {
		unsigned pair = prev | c;

		if ((pair & C_DOT) && pair != (C_DOT | C_ALNUM))
			return false;
		prev = c;
	}
	return i > 0 && s[i] == '\0' && prev == C_ALNUM;
}

/* Drops trailing characters in set from s[0..len); returns the new length. */
static size_t trim_trailing(const char *s, size_t len, const char *set)
{
	while (len > 0 && strchr(set, s[len - 1]) != NULL && s[len - 1] != '\0')
		len--;
	return len;
}

size_t vmi_name(const char *x, char *out)
{
	size_t plen = strlen(VMI_PREFIX);
	size_t xlen = x != NULL ? strnlen(x, DNS1123_LABEL_MAX) : 0;
	size_t len;

	memcpy(out, VMI_PREFIX, plen);
	len = plen + xlen > DNS1123_LABEL_MAX ? DNS1123_LABEL_MAX - plen : xlen;
	memcpy(out + plen, x != NULL ? x : "", len);
	len = trim_trailing(out, plen + len, "-");
	out[len] = '\0';
	return len;
}

static void sha256_hex8(const char *s, size_t len, char *hex)
{
	static const char digits[] = "0123456789abcdef";
	unsigned char md[SHA256_DIGEST_LENGTH];

	SHA256((const unsigned char *)s, len, md);
	for (size_t i = 0; i < CLAIM_HASH_LEN / 2; i++) {
		hex[2 * i] = digits[md[i] >> 4];
		hex[2 * i + 1] = digits[md[i] & 0xf];
	}
}

/* The hashed form: prefix + "-" + h + "-" + dev, where prefix is the longest
 * start of vmi that fills 63 characters, with trailing '-' and '.' removed
 * so that the prefix still ends a label. */
static int claim_name_hashed(const char *vmi, size_t vlen, const char *dev,
			     size_t dlen, char *out)
{
	size_t tail = 1 + CLAIM_HASH_LEN + 1 + dlen;
	size_t plen;
	char *p;

	if (tail >= DNS1123_LABEL_MAX)
		return LG_EINVAL;
	plen = DNS1123_LABEL_MAX - tail;
	if (plen > vlen)
		plen = vlen;
	plen = trim_trailing(vmi, plen, "-.");
	if (plen == 0)
		return LG_EINVAL;
	memcpy(out, vmi, plen);
	p = out + plen;
	*p++ = '-';
	sha256_hex8(vmi, vlen, p);
	p += CLAIM_HASH_LEN;
	*p++ = '-';
	memcpy(p, dev, dlen);
	p[dlen] = '\0';
	return 0;
}

int claim_name(const char *vmi, const char *dev, char *out)
{
	size_t vlen, dlen, len;
	int rc;

	out[0] = '\0';
	if (vmi == NULL || dev == NULL || dev[0] == '\0')
		return LG_EINVAL;
	vlen = strlen(vmi);
	dlen = strlen(dev);
	if (vlen + 1 + dlen <= DNS1123_LABEL_MAX) {
		memcpy(out, vmi, vlen);
		out[vlen] = '-';
		memcpy(out + vlen + 1, dev, dlen + 1);
	} else {
		rc = claim_name_hashed(vmi, vlen, dev, dlen, out);
		if (rc < 0)
			return rc;
	}
	/* Whatever went in, only a valid name may come out: an invalid vmi or
	 * dev (upper case, a leading '-', ...) leaves no name to form. */
	len = strlen(out);
	if (!dns1123_subdomain(out, len)) {
		out[0] = '\0';
		return LG_EINVAL;
	}
	return 0;
}

bool ns_is_tenant(const char *ns)
{
	if (ns == NULL)
		return false;
	return strcmp(ns, TENANT_ROOT) == 0 ||
	       strncmp(ns, TENANT_PREFIX, strlen(TENANT_PREFIX)) == 0;
}

bool ns_in_subtree(const char *root, const char *ns)
{
	size_t n = strlen(root);

	if (strcmp(root, ns) == 0)
		return true;
	if (strcmp(root, TENANT_ROOT) == 0)
		return ns_is_tenant(ns);
	/* Tenant names carry their ancestry: tenant-a-b is below tenant-a. */
	return ns_is_tenant(ns) && strncmp(ns, root, n) == 0 && ns[n] == '-';
}

bool ns_parent(const char *ns, char *out)
{
	const char *dash;
	size_t len;

	if (!ns_is_tenant(ns) || strcmp(ns, TENANT_ROOT) == 0)
		return false;
	dash = strrchr(ns, '-');
	len = (size_t)(dash - ns);
	/* "tenant-x" cuts to "tenant", which stands for the root. */
	if (len == strlen("tenant") && strncmp(ns, "tenant", len) == 0) {
		strcpy(out, TENANT_ROOT);
		return true;
	}
	if (len > DNS1123_SUBDOMAIN_MAX)
		return false;
	memcpy(out, ns, len);
	out[len] = '\0';
	return true;
}

int model__tenant_governed_ns(const char *p, const char *x, char *out, size_t cap)
{
	const char *a = "", *b = x;
	size_t alen, blen;

	if (p == NULL || x == NULL || out == NULL || cap == 0)
		return LG_EINVAL;
	if (strcmp(p, TENANT_ROOT) == 0) {
		if (strcmp(x, "root") == 0)
			b = TENANT_ROOT;
		else
			a = "tenant";
	} else {
		a = p;
	}
	alen = strlen(a);
	blen = strlen(b);
	if (alen + (alen > 0) + blen + 1 > cap)
		return LG_ERANGE;
	memcpy(out, a, alen);
	if (alen > 0)
		out[alen++] = '-';
	memcpy(out + alen, b, blen + 1);
	return 0;
}

#define TENANT_LABEL_PREFIX "tenant.cozystack.io/"

/* True when x is ns or one of its ancestors by the name rule. */
static bool is_ancestor_inclusive(const char *x, const char *ns)
{
	char cur[DNS1123_SUBDOMAIN_MAX + 1], up[DNS1123_SUBDOMAIN_MAX + 1];

	if (strlen(ns) > DNS1123_SUBDOMAIN_MAX)
		return false;
	strcpy(cur, ns);
	for (;;) {
		if (strcmp(cur, x) == 0)
			return true;
		if (!ns_parent(cur, up))
			return false;
		strcpy(cur, up);
	}
}

int namespace_map_object(const json_t *obj, struct namespace_map *nm,
			 struct lg_error *err)
{
	const json_t *meta = json_object_get(obj, "metadata");
	const json_t *labels = json_object_get(meta, "labels");
	const char *key, *api = jstr(obj, "apiVersion"),
			 *kind = jstr(obj, "kind");
	json_t *val;

	memset(nm, 0, sizeof(*nm));
	if (api == NULL || strcmp(api, "v1") != 0 || kind == NULL ||
	    strcmp(kind, "Namespace") != 0)
		return lg_error_set(err, LG_EUNKNOWN, "not a v1 Namespace");
	nm->name = jstr(meta, "name");
	if (nm->name == NULL || !dns1123_label(nm->name, strlen(nm->name)))
		return lg_error_set(err, LG_EINVAL,
				    "Namespace: metadata.name is not a "
				    "DNS-1123 label");
	nm->tenant = ns_is_tenant(nm->name);
	nm->has_parent = ns_parent(nm->name, nm->parent);
	nm->labels_agree = true;
	if (err != NULL)
		memset(err, 0, sizeof(*err));
	if (!json_is_object(labels))
		return 0;
	json_object_foreach ((json_t *)labels, key, val) {
		const char *x = key + strlen(TENANT_LABEL_PREFIX);

		if (strncmp(key, TENANT_LABEL_PREFIX,
			    strlen(TENANT_LABEL_PREFIX)) != 0 ||
		    is_ancestor_inclusive(x, nm->name))
			continue;
		nm->labels_agree = false;
		lg_error_set(err, LG_EINVAL,
			     "Namespace %s: label %s names no ancestor; the "
			     "name rule wins",
			     nm->name, key);
		break;
	}
	return 0;
}

/* eval: a JSON string in, {"valid": bool} out. */
static int eval_name_check(const json_t *input, json_t **out,
			   bool (*check)(const char *, size_t),
			   struct lg_error *err)
{
	if (!json_is_string(input))
		return lg_error_set(err, LG_EINVAL, "input must be a string");
	*out = json_pack(
		"{s:b}", "valid",
		check(json_string_value(input), json_string_length(input)));
	LG_ASSERT(*out != NULL); /* jansson aborts when out of memory */
	return 0;
}

int model__eval_dns1123_label(const struct eval_ctx *ctx, const json_t *input,
			      json_t **out, struct lg_error *err)
{
	return eval_name_check(input, out, dns1123_label, err);
}

int model__eval_dns1123_subdomain(const struct eval_ctx *ctx,
				  const json_t *input, json_t **out,
				  struct lg_error *err)
{
	return eval_name_check(input, out, dns1123_subdomain, err);
}

/* A JSON string member without NUL bytes, or NULL. A NUL would silently
 * shorten the name that the C string functions see. */
static const char *plain_str(const json_t *o, const char *k)
{
	const json_t *v = json_object_get(o, k);

	if (!json_is_string(v) ||
	    strlen(json_string_value(v)) != json_string_length(v))
		return NULL;
	return json_string_value(v);
}

int model__eval_claim_name(const struct eval_ctx *ctx, const json_t *input,
			   json_t **out, struct lg_error *err)
{
	char name[DNS1123_LABEL_MAX + 1];
	const char *vmi = plain_str(input, "vmi");
	const char *dev = plain_str(input, "device");

	if (!json_is_object(input))
		return lg_error_set(err, LG_EINVAL, "input must be an object");
	if (vmi == NULL || dev == NULL)
		return lg_error_set(err, LG_EINVAL,
				    "vmi and device must be strings");
	if (claim_name(vmi, dev, name) < 0)
		return lg_error_set(
			err, LG_EINVAL,
			"no valid claim name for vmi %.80s device %.80s", vmi,
			dev);
	*out = json_pack("{s:s}", "name", name);
	LG_ASSERT(*out != NULL); /* jansson aborts when out of memory */
	return 0;
}
