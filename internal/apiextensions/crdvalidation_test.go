package apiextensions

import (
	"context"
	"reflect"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

func specProp(crd *apiextensionsv1.CustomResourceDefinition, name string, mutate func(*apiextensionsv1.JSONSchemaProps)) {
	root := crd.Spec.Versions[0].Schema.OpenAPIV3Schema
	spec := root.Properties["spec"]
	p := spec.Properties[name]
	mutate(&p)
	spec.Properties[name] = p
	root.Properties["spec"] = spec
}

// TestValidateCRD refuses invalid CRDs with upstream's field paths and
// messages (what the API server returns in its 422).
func TestValidateCRD(t *testing.T) {
	const schemaPath = "spec.versions[0].schema.openAPIV3Schema"
	tests := []struct {
		name   string
		mutate func(*apiextensionsv1.CustomResourceDefinition)
		want   []string // each must be one error's text, in any order
	}{
		{name: "valid", mutate: func(*apiextensionsv1.CustomResourceDefinition) {}},
		{name: "name", mutate: func(c *apiextensionsv1.CustomResourceDefinition) { c.Name = "gadgets.example.com" },
			want: []string{`metadata.name: Invalid value: "gadgets.example.com": must be spec.names.plural+"."+spec.group`}},
		{name: "non-structural: no type", mutate: func(c *apiextensionsv1.CustomResourceDefinition) {
			specProp(c, "note", func(p *apiextensionsv1.JSONSchemaProps) { p.Type = "" })
		}, want: []string{schemaPath + `.properties[spec].properties[note].type: Required value: must not be empty for specified object fields`}},
		{name: "bad CEL syntax", mutate: func(c *apiextensionsv1.CustomResourceDefinition) {
			specProp(c, "immutable", func(p *apiextensionsv1.JSONSchemaProps) { p.XValidations[0].Rule = "self ==" })
		}, want: []string{
			schemaPath + `.properties[spec].properties[immutable].x-kubernetes-validations[0].rule: Invalid value: {"Rule":"self ==","Message":"is immutable",`,
			`compilation failed: ERROR: <input>:1:8: Syntax error: mismatched input '<EOF>' expecting`,
		}},
		{name: "CEL unknown field", mutate: func(c *apiextensionsv1.CustomResourceDefinition) {
			c.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].XValidations[0].Rule = "self.nope > 1"
		}, want: []string{
			schemaPath + `.properties[spec].x-kubernetes-validations[0].rule: Invalid value: {"Rule":"self.nope \u003e 1",`,
			"compilation failed: ERROR: <input>:1:5: undefined field 'nope'\n | self.nope > 1\n | ....^",
		}},
		{name: "CEL cost over budget", mutate: func(c *apiextensionsv1.CustomResourceDefinition) {
			specProp(c, "tags", func(p *apiextensionsv1.JSONSchemaProps) {
				p.XListType = nil
				p.XValidations = apiextensionsv1.ValidationRules{{Rule: "self.all(x, self.all(y, self.all(z, x + y + z != 'never')))"}}
			})
		}, want: []string{
			schemaPath + `.properties[spec].properties[tags].x-kubernetes-validations[0].rule: Forbidden: estimated rule cost exceeds budget by factor of more than 100x (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)`,
			schemaPath + `: Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of more than 100x`,
		}},
		{name: "no storage version", mutate: func(c *apiextensionsv1.CustomResourceDefinition) { c.Spec.Versions[0].Storage = false },
			want: []string{`spec.versions: Invalid value: [{"Name":"v1","Served":true,"Storage":false,`, `: must have exactly one version marked as storage version`}},
		{name: "printer column path", mutate: func(c *apiextensionsv1.CustomResourceDefinition) {
			c.Spec.Versions[0].AdditionalPrinterColumns[0].JSONPath = "spec.color"
		}, want: []string{`spec.versions[0].additionalPrinterColumns[0].JSONPath: Invalid value: "spec.color": must be a simple json path starting with .`}},
		{name: "selectable field in metadata", mutate: func(c *apiextensionsv1.CustomResourceDefinition) {
			c.Spec.Versions[0].SelectableFields[0].JSONPath = ".metadata.name"
		}, want: []string{`spec.versions[0].selectableFields[0].jsonPath: Invalid value: ".metadata.name": is an invalid path: does not refer to a valid field`}},
		{name: "default of the wrong type", mutate: func(c *apiextensionsv1.CustomResourceDefinition) {
			specProp(c, "replicas", func(p *apiextensionsv1.JSONSchemaProps) { p.Default = &apiextensionsv1.JSON{Raw: []byte(`"many"`)} })
		}, want: []string{schemaPath + `.properties[spec].properties[replicas].default: Invalid value: "string":  in body must be of type integer: "string"`}},
		{name: "list map key neither required nor defaulted", mutate: func(c *apiextensionsv1.CustomResourceDefinition) {
			specProp(c, "ports", func(p *apiextensionsv1.JSONSchemaProps) { p.Items.Schema.Required = nil })
		}, want: []string{schemaPath + `.properties[spec].properties[ports].items.properties[name].default: Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property`}},
		{name: "plural name", mutate: func(c *apiextensionsv1.CustomResourceDefinition) {
			c.Spec.Names.Plural = "Widgets"
			c.Name = "Widgets.example.com"
		}, want: []string{`spec.names.plural: Invalid value: "Widgets": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character`}},
		{name: "scope", mutate: func(c *apiextensionsv1.CustomResourceDefinition) { c.Spec.Scope = "Galaxy" },
			want: []string{`spec.scope: Unsupported value: "Galaxy": supported values: "Cluster", "Namespaced"`}},
		{name: "webhook conversion without client config", mutate: func(c *apiextensionsv1.CustomResourceDefinition) {
			c.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter}
		}, want: []string{`spec.conversion.webhookClientConfig: Required value: required when strategy is set to Webhook`}},
		{name: "preserveUnknownFields", mutate: func(c *apiextensionsv1.CustomResourceDefinition) { c.Spec.PreserveUnknownFields = true },
			want: []string{`spec.preserveUnknownFields: Invalid value: true: must be false in order to use defaults in the schema`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			crd := widgetCRD(t)
			tc.mutate(crd)
			errs := ValidateCRD(context.Background(), crd)
			if len(tc.want) == 0 {
				if len(errs) > 0 {
					t.Fatalf("ValidateCRD: %v", errs.ToAggregate())
				}
				return
			}
			if len(errs) == 0 {
				t.Fatal("ValidateCRD accepted an invalid CRD")
			}
			text := errs.ToAggregate().Error()
			for _, w := range tc.want {
				if !strings.Contains(text, w) {
					t.Errorf("ValidateCRD errors\n%s\nlack %q", text, w)
				}
			}
		})
	}
}

func TestValidateCRDUpdate(t *testing.T) {
	established := func(c *apiextensionsv1.CustomResourceDefinition) {
		c.Status.Conditions = []apiextensionsv1.CustomResourceDefinitionCondition{{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue}}
	}
	tests := []struct {
		name   string
		mutate func(crd, old *apiextensionsv1.CustomResourceDefinition)
		want   []string
	}{
		{name: "schema change", mutate: func(c, _ *apiextensionsv1.CustomResourceDefinition) {
			specProp(c, "size", func(p *apiextensionsv1.JSONSchemaProps) { p.MaxLength = ptr(int64(6)) })
		}},
		{name: "group is immutable", mutate: func(c, _ *apiextensionsv1.CustomResourceDefinition) {
			c.Spec.Group = "other.com"
			c.Name = "widgets.other.com"
		}, want: []string{`spec.group: Invalid value: "other.com": field is immutable`}},
		{name: "scope is immutable once established", mutate: func(c, old *apiextensionsv1.CustomResourceDefinition) {
			established(old)
			established(c)
			c.Spec.Scope = apiextensionsv1.ClusterScoped
		}, want: []string{`spec.scope: Invalid value: "Cluster": field is immutable`}},
		{name: "stored version removed", mutate: func(c, old *apiextensionsv1.CustomResourceDefinition) {
			old.Status.StoredVersions = []string{"v1", "v2"}
			c.Status.StoredVersions = []string{"v1", "v2"}
			c.Spec.Versions = c.Spec.Versions[:1]
		}, want: []string{`status.storedVersions[1]: Invalid value: "v2": missing from spec.versions; v2 was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in v2 and removes v2 from status.storedVersions`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			old := widgetCRD(t)
			old.ResourceVersion = "7"
			crd := old.DeepCopy()
			tc.mutate(crd, old)
			PrepareCRDForUpdate(crd, old)
			errs := ValidateCRDUpdate(context.Background(), crd, old)
			if len(tc.want) == 0 {
				if len(errs) > 0 {
					t.Fatalf("ValidateCRDUpdate: %v", errs.ToAggregate())
				}
				if crd.Generation != old.Generation+1 {
					t.Errorf("generation %d after a spec change of generation %d", crd.Generation, old.Generation)
				}
				return
			}
			text := errs.ToAggregate().Error()
			for _, w := range tc.want {
				if !strings.Contains(text, w) {
					t.Errorf("ValidateCRDUpdate errors\n%s\nlack %q", text, w)
				}
			}
		})
	}
}

func TestPrepareCRD(t *testing.T) {
	crd := widgetCRD(t)
	crd.Status.StoredVersions = []string{"bogus"}
	crd.Status.Conditions = []apiextensionsv1.CustomResourceDefinitionCondition{{Type: apiextensionsv1.Established}}
	PrepareCRDForCreate(crd)
	if !reflect.DeepEqual(crd.Status, apiextensionsv1.CustomResourceDefinitionStatus{StoredVersions: []string{"v1"}}) || crd.Generation != 1 {
		t.Errorf("prepared for create: generation %d, status %+v", crd.Generation, crd.Status)
	}

	old := crd.DeepCopy()
	old.Status.AcceptedNames.Kind = "Widget"
	upd := old.DeepCopy()
	upd.Status = apiextensionsv1.CustomResourceDefinitionStatus{}
	upd.Spec.Versions[0].Storage, upd.Spec.Versions[1].Storage = false, true
	PrepareCRDForUpdate(upd, old)
	if upd.Status.AcceptedNames.Kind != "Widget" || !reflect.DeepEqual(upd.Status.StoredVersions, []string{"v1", "v2"}) || upd.Generation != 2 {
		t.Errorf("prepared for update: generation %d, status %+v", upd.Generation, upd.Status)
	}
}

func TestValidateCRDStatusUpdate(t *testing.T) {
	old := widgetCRD(t)
	old.ResourceVersion = "7"
	crd := old.DeepCopy()
	crd.Status.AcceptedNames = apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Kind: "Widget", ListKind: "WidgetList", Singular: "widget"}
	if errs := ValidateCRDStatusUpdate(context.Background(), crd, old); len(errs) > 0 {
		t.Fatalf("ValidateCRDStatusUpdate: %v", errs.ToAggregate())
	}
	crd.Status.AcceptedNames.Plural = "Not Valid"
	errs := ValidateCRDStatusUpdate(context.Background(), crd, old)
	if want := `status.acceptedNames.plural: Invalid value: "Not Valid"`; !strings.Contains(errs.ToAggregate().Error(), want) {
		t.Errorf("ValidateCRDStatusUpdate: %v, want %q", errs.ToAggregate(), want)
	}
}
