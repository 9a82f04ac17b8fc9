package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

var jsonType = typed("application/json")

func TestStockIsSetNotIncremented(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for range 2 { // an admin tool that sends it twice
		r := b.send(t, "PUT", "/stock/sku-1", jsonType, []byte(`{"available":7}`))
		if r.status != http.StatusOK {
			t.Fatalf("PUT /stock/sku-1: %d %v", r.status, r.problem)
		}
	}
	resp, err := http.Get(b.url + "/stock/sku-1")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var level struct {
		SKU                 string
		Available, Reserved int64
	}
	if err := json.NewDecoder(resp.Body).Decode(&level); err != nil || level.SKU != "sku-1" || level.Available != 7 || level.Reserved != 0 {
		t.Fatalf("GET /stock/sku-1 = %+v, %v; want 7 available after two sets of 7", level, err)
	}
	if r := b.send(t, "GET", "/stock/unknown", nil, nil); r.status != http.StatusNotFound {
		t.Errorf("unknown SKU: %d, want 404", r.status)
	}
	for name, tc := range map[string]struct {
		path, body string
		status     int
	}{
		"negative":     {"/stock/sku-1", `{"available":-1}`, http.StatusBadRequest},
		"missing":      {"/stock/sku-1", `{}`, http.StatusBadRequest},
		"a delta":      {"/stock/sku-1", `{"add":3}`, http.StatusBadRequest},
		"bad SKU":      {"/stock/" + strings.Repeat("x", 65), `{"available":1}`, http.StatusBadRequest},
		"bad SKU char": {"/stock/sku.1", `{"available":1}`, http.StatusBadRequest},
	} {
		if r := b.send(t, "PUT", tc.path, jsonType, []byte(tc.body)); r.status != tc.status || r.problem == nil {
			t.Errorf("%s: %d %v, want a %d problem", name, r.status, r.problem, tc.status)
		}
	}
	if r := b.send(t, "PUT", "/stock/sku-1", typed("text/plain"), []byte(`{"available":0}`)); r.status != http.StatusUnsupportedMediaType {
		t.Errorf("text/plain: %d, want 415", r.status)
	}
}

func TestOrderItems(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, sku := range []string{"sku-1", "sku-2"} {
		if r := b.send(t, "PUT", "/stock/"+sku, jsonType, []byte(`{"available":5}`)); r.status != http.StatusOK {
			t.Fatal(r.status)
		}
	}
	order := func(items string) string {
		return `{"customer_id":"c1","amount_cents":1000,"currency":"BRL","items":` + items + `}`
	}
	many := "[" + strings.TrimSuffix(strings.Repeat(`{"sku":"sku-1","quantity":1},`, 51), ",") + "]"
	for name, items := range map[string]string{
		"none":           `[]`,
		"51 items":       many,
		"quantity 0":     `[{"sku":"sku-1","quantity":0}]`,
		"quantity 1001":  `[{"sku":"sku-1","quantity":1001}]`,
		"a SKU twice":    `[{"sku":"sku-1","quantity":1},{"sku":"sku-1","quantity":2}]`,
		"a misspelt SKU": `[{"sku":"sku 1","quantity":1}]`,
		"an unknown SKU": `[{"sku":"sku-1","quantity":1},{"sku":"sku-9","quantity":1}]`,
	} {
		r := b.send(t, "POST", "/orders", jsonType, []byte(order(items)))
		if r.status != http.StatusUnprocessableEntity || r.problem == nil {
			t.Errorf("%s: %d %v, want a 422 problem", name, r.status, r.problem)
		}
	}
	if n, m := b.rows(t, "orders"), b.rows(t, "order_items"); n != 0 || m != 0 {
		t.Fatalf("refused orders wrote %d orders and %d items, want nothing", n, m)
	}
	r := b.send(t, "POST", "/orders", jsonType, []byte(order(`[{"sku":"sku-2","quantity":2},{"sku":"sku-1","quantity":1}]`)))
	if r.status != http.StatusCreated {
		t.Fatalf("valid items: %d %v", r.status, r.problem)
	}
	if n := b.rows(t, "order_items"); n != 2 {
		t.Fatalf("order_items = %d, want 2", n)
	}
}
