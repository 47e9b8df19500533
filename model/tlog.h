/*
 * model/tlog.h — the transparency log (DESIGN 4.4): the Merkle tree of the
 * log (model/merkle.c) and signed notes and checkpoints (model/note.c).
 * Pure, like the rest of model/; included by model/model.h.
 */
#ifndef GPULEDGER_MODEL_TLOG_H
#define GPULEDGER_MODEL_TLOG_H

#include "model/base.h"

/* ---------------------------------------------------------------------- */
/* The Merkle tree of the log (model/merkle.c; RFC 9162 2.1, DESIGN 4.4).
 * Leaf index = seq - 1; leaf hash = SHA-256(0x00 || event_jcs(event)),
 * node hash = SHA-256(0x01 || left || right). A complete subtree is named
 * by (level, index): it covers leaves [index * 2^level, (index+1) * 2^level).
 */

#define MERKLE_HASH_BYTES 32
/* Hashes in any proof of a tree of at most 2^64 leaves (consistency proofs
 * need up to two per level). */
#define MERKLE_PROOF_MAX 130

void merkle_leaf_hash(const void *data, size_t len, uint8_t *out);
/* The post-order position of a complete subtree: nodes numbered in the
 * order a growing tree completes them, so that they are appended in
 * increasing order (the ledger's storage key). */
uint64_t merkle_node_pos(unsigned level, uint64_t index);

/* Returns the hash of the complete subtree (level, index) into out (0), or
 * an LG_* code. */
typedef int merkle_get_fn(void *ctx, unsigned level, uint64_t index,
			  uint8_t *out);
/* Receives a subtree completed by a push (leaves first, then upwards). */
typedef void merkle_node_fn(void *ctx, unsigned level, uint64_t index,
			    const uint8_t *hash);

/* The right edge of a tree: one complete subtree per set bit of size. */
struct merkle_edge {
	uint64_t size;
	uint8_t hash[64][MERKLE_HASH_BYTES];
};
/* Appends a leaf; emit (may be NULL) sees every subtree it completes. */
void merkle_edge_push(struct merkle_edge *e, const uint8_t *leaf,
		      merkle_node_fn *emit, void *ctx);
/* The edge of the tree of the given size, from stored subtrees. */
int merkle_edge_load(struct merkle_edge *e, uint64_t size, merkle_get_fn *get,
		     void *ctx);

struct merkle_proof {
	size_t n;
	uint8_t hash[MERKLE_PROOF_MAX][MERKLE_HASH_BYTES];
};
/* MTH(D[0:size]) from stored subtrees (O(log size) lookups). */
int merkle_root(merkle_get_fn *get, void *ctx, uint64_t size, uint8_t *out);
/* RFC 9162 2.1.3.1: the audit path of leaf index in the tree of size.
 * LG_EINVAL when index >= size. */
int merkle_inclusion_proof(merkle_get_fn *get, void *ctx, uint64_t index,
			   uint64_t size, struct merkle_proof *p);
/* RFC 9162 2.1.4.1: the consistency proof from size m to size n (m <= n);
 * empty when m is 0 or n. */
int merkle_consistency_proof(merkle_get_fn *get, void *ctx, uint64_t m,
			     uint64_t n, struct merkle_proof *p);
/* 0 when the proof proves leaf at index in the tree of size with root;
 * LG_EINVAL for a malformed proof, LG_EMISMATCH for a wrong one. */
int merkle_verify_inclusion(uint64_t index, uint64_t size, const uint8_t *leaf,
			    const struct merkle_proof *p, const uint8_t *root);
/* RFC 9162 2.1.4.2: 0 when the tree of size n and root2 extends the tree
 * of size m and root1; LG_EINVAL / LG_EMISMATCH as above. */
int merkle_verify_consistency(uint64_t m, uint64_t n, const uint8_t *root1,
			      const uint8_t *root2,
			      const struct merkle_proof *p);

/* ---------------------------------------------------------------------- */
/* Signed notes and checkpoints (model/note.c): C2SP signed-note with
 * Ed25519 keys in the formats of Go's sumdb/note, and C2SP tlog-checkpoint
 * bodies ("<origin>\n<size>\n<base64 root>\n"). */

#define NOTE_NAME_MAX  255
#define NOTE_KEY_BYTES 32
#define NOTE_MAX_BYTES (1u << 16)
/* Longest key text (name, id, base64 of 33 bytes, "PRIVATE+KEY+"). */
#define NOTE_KEY_TEXT_MAX (NOTE_NAME_MAX + 80)

struct note_verifier {
	char name[NOTE_NAME_MAX + 1];
	uint32_t id;
	uint8_t pub[NOTE_KEY_BYTES];
};
struct note_signer {
	char name[NOTE_NAME_MAX + 1];
	uint32_t id;
	uint8_t seed[NOTE_KEY_BYTES], pub[NOTE_KEY_BYTES];
};

/* "<name>+<hex id>+<base64(0x01 || key)>"; the id must match the key. */
int note_verifier_parse(struct note_verifier *v, const char *text,
			struct lg_error *err);
/* "PRIVATE+KEY+<name>+<hex id>+<base64(0x01 || seed)>". */
int note_signer_parse(struct note_signer *s, const char *text,
		      struct lg_error *err);
int note_signer_from_seed(struct note_signer *s, const char *name,
			  const uint8_t *seed, struct lg_error *err);
/* Key texts into out (NOTE_KEY_TEXT_MAX bytes); return their length. */
size_t note_verifier_format(const struct note_signer *s, char *out);
size_t note_signer_format(const struct note_signer *s, char *out);
/* The signed note of text (non-empty, ends in \n, no blank line): text,
 * a blank line and one signature line. Caller frees; NULL on bad text. */
char *note_sign(const struct note_signer *s, const char *text);
/* Opens msg (len bytes) with the known keys vs[0..nv): signature lines of
 * other keys are ignored; 0 when at least one known key verifies and none
 * fails, with *text_len the length of the signed text (msg's start). */
int note_open(const char *msg, size_t len, const struct note_verifier *vs,
	      size_t nv, size_t *text_len, struct lg_error *err);
/* Base64 (standard, padded, strict). encode writes 4 * ceil(n / 3) + 1. */
size_t note_b64_encode(const uint8_t *in, size_t n, char *out);
int note_b64_decode(const char *in, size_t n, uint8_t *out, size_t cap,
		    size_t *len);

/* The checkpoint body of a tree (caller frees). */
char *tlog_checkpoint_text(const char *origin, uint64_t size,
			   const uint8_t *root);
/* Parses a body's first three lines (extension lines may follow); origin
 * holds NOTE_NAME_MAX + 1 bytes. */
int tlog_checkpoint_parse(const char *text, size_t len, char *origin,
			  uint64_t *size, uint8_t *root, struct lg_error *err);


#endif
