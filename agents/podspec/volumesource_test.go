package podspec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/benchkite/benchkite/internal/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// volumesource.json is k8s.io/api's VolumeSource as the pod builder checks
// it; -update rewrites it after a k8s.io/api upgrade.
func TestVolumeSourceSchema(t *testing.T) {
	t.Parallel()
	s, err := shapeOf(reflect.TypeFor[corev1.VolumeSource](), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.MarshalIndent(s, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	testutil.Golden(t, "volumesource.json", append(b, '\n'))
}

var unmarshaler = reflect.TypeFor[json.Unmarshaler]()

// shapeOf describes t as encoding/json reads it, with Kubernetes' own
// decoders for the types that have them.
func shapeOf(t reflect.Type, seen []reflect.Type) (*shape, error) {
	for _, s := range seen {
		if s == t {
			return nil, fmt.Errorf("recursive type %s", t)
		}
	}
	if t.Kind() == reflect.Pointer {
		return shapeOf(t.Elem(), seen)
	}
	seen = append(seen, t)
	switch t {
	case reflect.TypeFor[resource.Quantity]():
		return &shape{Type: "quantity"}, nil
	case reflect.TypeFor[metav1.Time](), reflect.TypeFor[metav1.MicroTime]():
		return &shape{Type: "time"}, nil
	case reflect.TypeFor[metav1.FieldsV1]():
		return &shape{Type: "any"}, nil
	}
	if reflect.PointerTo(t).Implements(unmarshaler) || t.Implements(unmarshaler) {
		return nil, fmt.Errorf("%s decodes itself: give it a shape in shapeOf", t)
	}
	switch t.Kind() {
	case reflect.String:
		return &shape{Type: "string"}, nil
	case reflect.Bool:
		return &shape{Type: "boolean"}, nil
	case reflect.Int32, reflect.Int, reflect.Int64:
		if t.Kind() == reflect.Int32 {
			return &shape{Type: "int32"}, nil
		}
		return &shape{Type: "int64"}, nil
	case reflect.Float32, reflect.Float64:
		return &shape{Type: "number"}, nil
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return &shape{Type: "string"}, nil // base64
		}
		e, err := shapeOf(t.Elem(), seen)
		if err != nil {
			return nil, err
		}
		return &shape{Type: "array", Elem: e}, nil
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return nil, fmt.Errorf("map key of %s", t)
		}
		e, err := shapeOf(t.Elem(), seen)
		if err != nil {
			return nil, err
		}
		return &shape{Type: "map", Elem: e}, nil
	case reflect.Struct:
		s := &shape{Type: "object", Fields: map[string]*shape{}}
		if err := addFields(s, t, seen); err != nil {
			return nil, err
		}
		return s, nil
	}
	return nil, fmt.Errorf("type %s of kind %s", t, t.Kind())
}

func addFields(s *shape, t reflect.Type, seen []reflect.Type) error {
	for f := range t.Fields() {
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		if f.Anonymous && (name == "" || strings.Contains(","+opts+",", ",inline,")) {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if err := addFields(s, ft, seen); err != nil {
				return err
			}
			continue
		}
		if name == "" {
			name = f.Name
		}
		fs, err := shapeOf(f.Type, seen)
		if err != nil {
			return fmt.Errorf("%s.%s: %w", t, f.Name, err)
		}
		s.Fields[name] = fs
	}
	return nil
}

// Sources the clusters use, and mistakes in them, checked as the pod
// builder checks them and then read back by k8s.io/api.
func TestVolumeSource(t *testing.T) {
	t.Parallel()
	tests := []struct {
		raw     string
		want    string // the source as written into the pod
		wantErr string
	}{
		{raw: `{"persistentVolumeClaim": {"claimName": "hf", "readOnly": false}}`, want: `{"persistentVolumeClaim":{"claimName":"hf","readOnly":false}}`},
		{raw: `{"hostPath": {"path": "/data/hf", "type": "DirectoryOrCreate"}}`, want: `{"hostPath":{"path":"/data/hf","type":"DirectoryOrCreate"}}`},
		{raw: `{"nfs": {"server": "10.0.0.2", "path": "/export"}}`, want: `{"nfs":{"path":"/export","server":"10.0.0.2"}}`},
		{raw: `{"emptyDir": {"sizeLimit": "500Gi"}}`, want: `{"emptyDir":{"sizeLimit":"500Gi"}}`},
		{raw: `{"ephemeral": {"volumeClaimTemplate": {"spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Ti"}}}}}}`,
			want: `{"ephemeral":{"volumeClaimTemplate":{"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Ti"}}}}}}`},
		{raw: `{"persistentVolumeClaim": {"claimNam": "hf"}}`, wantErr: `not a k8s volume source: json: unknown field "claimNam"`},
		{raw: `{"persistentVolumeClaim": {"ClaimName": "hf"}}`, wantErr: `unknown field "ClaimName"`},
		{raw: `{"pvc": {"claimName": "hf"}}`, wantErr: `unknown field "pvc"`},
		{raw: `{"hostPath": {"path": 7}}`, wantErr: `cannot use a number as string for field "hostPath.path"`},
		{raw: `{"emptyDir": {"sizeLimit": "lots"}}`, wantErr: `field "emptyDir.sizeLimit": "lots" is not a quantity`},
		{raw: `{"ephemeral": {"volumeClaimTemplate": {"spec": {"resources": {"requests": {"storage": "1Tb"}}}}}}`, wantErr: `"1Tb" is not a quantity`},
		{raw: `{"iscsi": {"lun": 4294967296}}`, wantErr: `4294967296 is not an int32 for field "iscsi.lun"`},
		{raw: `{"emptyDir": null}`, wantErr: "volume source emptyDir is null"},
		{raw: `{}`, wantErr: "a volume source holds exactly one source, got {}"},
		{raw: `{"emptyDir": {}, "hostPath": {"path": "/x"}}`, wantErr: "a volume source holds exactly one source"},
		{raw: `["emptyDir"]`, wantErr: "not a k8s volume source: json: cannot use an array as object"},
		{raw: `{"emptyDir": {}} {}`, wantErr: "more after the JSON value"},
	}
	for _, tt := range tests {
		got, err := volumeSource(json.RawMessage(tt.raw))
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("volumeSource(%s) error = %v, want one containing %q", tt.raw, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("volumeSource(%s) error = %v", tt.raw, err)
			continue
		}
		if string(got) != tt.want {
			t.Errorf("volumeSource(%s) = %s, want %s", tt.raw, got, tt.want)
		}
		var vs corev1.VolumeSource
		dec := json.NewDecoder(bytes.NewReader(got))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&vs); err != nil {
			t.Errorf("volumeSource(%s) = %s, which k8s.io/api does not read: %v", tt.raw, got, err)
		}
	}
}
