package admin

import (
	"net/http"
	"time"

	"github.com/mcpgate/mcpgate/gateway/store"
)

// AuditChain is what the audit chain routes read of the store: the
// chain head, the latest checkpoint and a verification
// (store.AuditChain; gateway/auditchain says what each returns).
type AuditChain = store.AuditChain

// chainHead is a place in the audit chain as the API shows it: a seq
// and the lowercase hex of its hash.
type chainHead struct {
	Seq  int64  `json:"seq"`
	Hash string `json:"hash"`
}

// chainCheckpoint is the latest checkpoint as GET /audit-chain shows it;
// Signed is false for a checkpoint written without
// MCPGATE_AUDIT_SIGNING_KEY_FILE (KeyID then "").
type chainCheckpoint struct {
	chainHead
	Time   time.Time `json:"time"`
	KeyID  string    `json:"key_id"`
	Signed bool      `json:"signed"`
}

// replyGrace is how long a reply that took long to compute (the audit
// chain's verification, which reads every sealed row) has to be written,
// counted from when it is ready rather than from the request.
const replyGrace = 30 * time.Second

func (h *handler) auditChain() (AuditChain, error) {
	if h.opts.Chain == nil {
		return nil, notFound("this gateway's store keeps no audit chain")
	}
	return h.opts.Chain, nil
}

// getAuditChain: GET /audit-chain → {"head":{"seq","hash"},
// "checkpoint":{"seq","hash","time","key_id","signed"}}: the last sealed
// row and the latest checkpoint (absent before the first). Two indexed
// reads; GET /audit-chain/verify recomputes the chain.
func (h *handler) getAuditChain(w http.ResponseWriter, r *http.Request) error {
	chain, err := h.auditChain()
	if err != nil {
		return err
	}
	head, err := chain.AuditChainHead(r.Context())
	if err != nil {
		return err
	}
	out := map[string]any{"head": chainHead{Seq: head.Seq, Hash: head.Hash.String()}}
	cp, ok, err := chain.LatestAuditCheckpoint(r.Context(), time.UnixMicro(maxCursorMicros))
	if err != nil {
		return err
	}
	if ok {
		out["checkpoint"] = chainCheckpoint{chainHead: chainHead{Seq: cp.Seq, Hash: cp.Hash.String()},
			Time: cp.Time, KeyID: cp.KeyID, Signed: len(cp.Signature) > 0}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// verifyAuditChain: GET /audit-chain/verify → {"verified", "rows",
// "head", "unsealed", "problem":{"seq","what","detail"}}: the chain
// recomputed from its first row (or its retention anchor) to the head,
// as `mcpgate audit verify` does; verified is false, with the first row
// changed, deleted, inserted or reordered as problem, when it does not
// hold. It reads every sealed row (docs/benchmarks.md, "Audit chain
// verify", has the time a million take).
func (h *handler) verifyAuditChain(w http.ResponseWriter, r *http.Request) error {
	chain, err := h.auditChain()
	if err != nil {
		return err
	}
	rep, err := chain.VerifyAuditChain(r.Context())
	if err != nil {
		return err
	}
	// A long trail takes longer than the server's write timeout, which
	// counts from the request: the reply gets a deadline of its own.
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(replyGrace))
	out := map[string]any{"verified": rep.Problem == nil, "rows": rep.Verified,
		"head": chainHead{Seq: rep.Head.Seq, Hash: rep.Head.Hash.String()}, "unsealed": rep.Unsealed}
	if p := rep.Problem; p != nil {
		out["problem"] = map[string]any{"seq": p.Seq, "what": p.What, "detail": p.Detail}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
