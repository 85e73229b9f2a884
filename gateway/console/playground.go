package console

import (
	"encoding/json"
	"net/http"
	"strings"
)

// playgroundFields are the playground form's fields, the fields of POST
// /admin/v1/explain.
var playgroundFields = []string{"workspace", "task", "profile", "user", "tool", "args"}

type playgroundView struct {
	Form   map[string]string
	Error  *formError
	Result *explanation
}

func (c *Console) playgroundPage(w http.ResponseWriter, r *http.Request, sess *session) {
	form := map[string]string{"args": "{}"}
	for _, k := range playgroundFields {
		if s := r.URL.Query().Get(k); s != "" {
			form[k] = s
		}
	}
	c.render(w, r, http.StatusOK, "playground.html", sess, playgroundView{Form: form})
}

// explainCall sends the form to POST /admin/v1/explain and shows the
// explained decision. It changes nothing (explain writes nothing), but is a
// POST with the CSRF token like every form. Arguments that are not valid
// JSON are sent as a string, so the admin API's own message says what
// args must be.
func (c *Console) explainCall(w http.ResponseWriter, r *http.Request, sess *session) {
	v := playgroundView{Form: map[string]string{}}
	body := map[string]any{}
	for _, k := range playgroundFields {
		v.Form[k] = strings.TrimSpace(r.PostFormValue(k))
		if k != "args" {
			body[k] = v.Form[k]
		}
	}
	if a := v.Form["args"]; a != "" {
		if json.Valid([]byte(a)) {
			body["args"] = json.RawMessage(a)
		} else {
			body["args"] = a
		}
	}
	var ex explanation
	if err := c.call(r.Context(), sess.token, http.MethodPost, "/explain", body, &ex); err != nil {
		v.Error = fieldError(err, playgroundFields...)
		c.render(w, r, status(err), "playground.html", sess, v)
		return
	}
	v.Result = &ex
	c.render(w, r, http.StatusOK, "playground.html", sess, v)
}
