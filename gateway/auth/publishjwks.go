package auth

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/MicahParks/jwkset"
)

// PublicJWKS returns the JWKS document ({"keys":[…]}) of the public halves
// of the PEM private keys, each with "use":"sig", the one algorithm the
// gateway verifies it with ("alg") and a kid made of the SHA-256 of its
// public key. It is the key set of a development identity provider
// (`mcpgate jwt jwks`, docs/operations.md "Identity provider"); errors
// are those of the private keys, by position.
func PublicJWKS(privatePEMs ...[]byte) ([]byte, error) {
	var set jwkset.JWKSMarshal
	for i, p := range privatePEMs {
		method, key, err := parsePrivateKey(p)
		if err != nil {
			return nil, fmt.Errorf("key %d: %w", i+1, err)
		}
		der, err := x509.MarshalPKIXPublicKey(key.Public())
		if err != nil {
			return nil, fmt.Errorf("key %d: %w", i+1, err)
		}
		sum := sha256.Sum256(der)
		jwk, err := jwkset.NewJWKFromKey(key.Public(), jwkset.JWKOptions{Metadata: jwkset.JWKMetadataOptions{
			KID: base64.RawURLEncoding.EncodeToString(sum[:12]), ALG: jwkset.ALG(method.Alg()), USE: jwkset.UseSig,
		}})
		if err != nil {
			return nil, fmt.Errorf("key %d: %w", i+1, err)
		}
		set.Keys = append(set.Keys, jwk.Marshal())
	}
	return json.MarshalIndent(set, "", "  ")
}
