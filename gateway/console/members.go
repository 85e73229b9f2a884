package console

import (
	"net/http"
	"strings"

	"github.com/mcpgate/mcpgate/gateway"
)

// Roles are the workspace roles a member may hold, in the order the
// member forms offer them (the admin API's field "role" accepts exactly
// these).
var Roles = []string{gateway.RoleOwner, gateway.RoleAdmin, gateway.RoleMember, gateway.RoleViewer}

// memberRow is one member of the workspace page with its change form,
// refilled after a refusal.
type memberRow struct {
	gateway.Member
	// FormRole and FormSeat are what the change form shows: the stored
	// values, or those of a refused submission (the cells beside it keep
	// showing what is stored).
	FormRole, FormSeat string
	Err                *formError
}

// memberForm is the add-member form of the workspace page, refilled after
// a refusal.
type memberForm struct {
	UserID   string
	Role     string
	SeatType string
	Err      *formError
}

// saveMember sends PUT /workspaces/{ws}/members/{user} with the form's
// role and seat type: the add form (user_id from the form, "add" set) and
// each member's change form (user from the path) both end here. A refusal
// shows the admin API's message next to the field it names and stores
// nothing.
func (c *Console) saveMember(w http.ResponseWriter, r *http.Request, sess *session) {
	ws := r.PathValue("ws")
	user := r.PathValue("user")
	adding := user == ""
	if adding {
		user = strings.TrimSpace(r.PostFormValue("user_id"))
	}
	m := gateway.Member{UserID: user, Role: r.PostFormValue("role"), SeatType: strings.TrimSpace(r.PostFormValue("seat_type"))}
	var err error
	if user == "" {
		err = &apiError{Status: http.StatusBadRequest, Message: "user id is required; enter the member's user id (the sub of their session JWTs), 1-128 characters from A-Z a-z 0-9 . _ : -"}
	} else {
		err = c.call(r.Context(), sess.token, http.MethodPut, "/workspaces/"+esc(ws)+"/members/"+esc(user),
			map[string]string{"role": m.Role, "seat_type": m.SeatType}, nil)
	}
	if err != nil {
		fe := fieldError(err, "user_id", "role", "seat_type")
		if adding {
			c.showWorkspace(w, r, sess, status(err), "", &memberForm{UserID: m.UserID, Role: m.Role, SeatType: m.SeatType, Err: fe}, nil)
		} else {
			c.showWorkspace(w, r, sess, status(err), "", nil, &memberRow{Member: m, FormRole: m.Role, FormSeat: m.SeatType, Err: fe})
		}
		return
	}
	http.Redirect(w, r, Prefix+"/workspaces/"+esc(ws)+"?notice=member-saved", http.StatusSeeOther)
}

// removeMember sends DELETE /workspaces/{ws}/members/{user}.
func (c *Console) removeMember(w http.ResponseWriter, r *http.Request, sess *session) {
	ws, user := r.PathValue("ws"), r.PathValue("user")
	if err := c.call(r.Context(), sess.token, http.MethodDelete, "/workspaces/"+esc(ws)+"/members/"+esc(user), nil, nil); err != nil {
		c.showWorkspace(w, r, sess, status(err), "", nil, &memberRow{Member: gateway.Member{UserID: user}, Err: fieldError(err)})
		return
	}
	http.Redirect(w, r, Prefix+"/workspaces/"+esc(ws)+"?notice=member-removed", http.StatusSeeOther)
}
