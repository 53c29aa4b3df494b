package calc

import (
	"testing"
)

func TestAdds(t *testing.T) {
	if 1+1 != 2 {
		t.Fatal("math broke")
	}
}

func TestFails(t *testing.T) { t.Errorf("got %d, want %d", 2, 3) }

func TestSkipped(t *testing.T) { t.Skip("not today") }

func TestTable(t *testing.T) {
	for _, c := range []struct{ name string; a, b int }{{"one", 1, 1}, {"two", 2, 3}, {"a::b", 1, 1}} {
		t.Run(c.name, func(t *testing.T) {
			if c.a != c.b {
				t.Errorf("%d != %d", c.a, c.b)
			}
		})
	}
}

func TestCleanupFails(t *testing.T) {
	t.Cleanup(func() { t.Error("teardown broke") })
}
