//! Type model → Rust source (quote; syn where the generator must read its own output).

use crate::model::{Body, Field, Kind, Model, Presence, Repr, Ty, TypeDef};
use proc_macro2::{Ident, Span, TokenStream};
use quote::{format_ident, quote};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

#[path = "fast.rs"]
mod fast;

fn ident(s: &str) -> Ident {
    Ident::new(s, Span::call_site())
}

const KEYWORDS: &[&str] = &[
    "as", "break", "const", "continue", "crate", "else", "enum", "extern", "false", "fn", "for",
    "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref", "return",
    "self", "Self", "static", "struct", "super", "trait", "true", "type", "unsafe", "use", "where",
    "while", "async", "await", "dyn", "abstract", "become", "box", "do", "final", "macro",
    "override", "priv", "typeof", "unsized", "virtual", "yield", "try", "gen",
];

fn snake(s: &str) -> String {
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 && !out.ends_with('_') {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else if c.is_ascii_alphanumeric() {
            out.push(c);
        } else if !out.ends_with('_') {
            out.push('_');
        }
    }
    let out = out.trim_matches('_').to_string();
    if out.is_empty() || out.starts_with(|c: char| c.is_ascii_digit()) {
        format!("f_{out}")
    } else if KEYWORDS.contains(&out.as_str()) {
        format!("{out}_")
    } else {
        out
    }
}

/// `crate::custom` types generic over a generated type: (custom type, its parameter).
const GENERIC_CUSTOM: &[(&str, &str)] = &[("DynamicToolSpecs", "DynamicToolSpec")];

struct Emitter<'a> {
    m: &'a Model,
}

impl Emitter<'_> {
    /// The path of a type: a type whose serde name is taken by another lives in a module of
    /// its own under that name (serde prints the Rust ident in some messages).
    fn path_of(&self, n: usize) -> TokenStream {
        let t = &self.m.types[n];
        match &t.serde_name {
            Some(name) => {
                let m = format_ident!("r#{}", snake(&t.ident));
                let id = ident(name);
                quote!(#m::#id)
            }
            None => {
                let id = ident(&t.ident);
                quote!(#id)
            }
        }
    }

    /// The Rust type; named types are boxed outside collections (recursive types need it).
    fn rust_ty(&self, t: &Ty, boxed: bool) -> TokenStream {
        match t {
            Ty::Str => quote!(String),
            Ty::Path => quote!(std::path::PathBuf),
            Ty::Bool => quote!(bool),
            Ty::Int(k) | Ty::Float(k) => {
                let k = ident(k);
                quote!(#k)
            }
            Ty::Value => quote!(serde_json::Value),
            Ty::Unit => quote!(()),
            Ty::Vec(i) => {
                let i = self.rust_ty(i, false);
                quote!(Vec<#i>)
            }
            Ty::Map(i) => {
                let i = self.rust_ty(i, false);
                quote!(std::collections::HashMap<String, #i>)
            }
            Ty::Opt(i) => {
                let i = self.rust_ty(i, boxed);
                quote!(Option<#i>)
            }
            Ty::Named(n) => {
                let id = self.path_of(*n);
                if boxed {
                    quote!(Box<#id>)
                } else {
                    quote!(#id)
                }
            }
            Ty::Custom(c) => {
                let id = ident(c);
                // Custom types that hold one of the version's own types take it as a parameter.
                match GENERIC_CUSTOM.iter().find(|(name, _)| name == c) {
                    Some((_, arg)) => {
                        let arg = ident(arg);
                        quote!(crate::custom::#id<#arg>)
                    }
                    None => quote!(crate::custom::#id),
                }
            }
            Ty::Tuple(ts) => {
                let ts: Vec<_> = ts.iter().map(|t| self.rust_ty(t, boxed)).collect();
                quote!((#(#ts,)*))
            }
        }
    }

    /// The type named in `Track` calls (no boxes: tracking is by type only).
    fn track_ty(&self, t: &Ty) -> TokenStream {
        self.rust_ty(t, false)
    }

    fn fields(&self, fields: &[Field]) -> Vec<TokenStream> {
        self.fields_vis(fields, true)
    }

    fn fields_vis(&self, fields: &[Field], public: bool) -> Vec<TokenStream> {
        let vis = if public { quote!(pub) } else { quote!() };
        let mut used = HashSet::new();
        fields
            .iter()
            .map(|f| {
                let mut name = snake(&f.json);
                while !used.insert(name.clone()) {
                    name.push('_');
                }
                let id = format_ident!("{}", name);
                let ty = self.rust_ty(&f.ty, true);
                let json = &f.json;
                if f.flatten {
                    quote!(#[serde(flatten)] #vis #id: #ty)
                } else if f.presence == Presence::Default {
                    if matches!(f.ty, Ty::Opt(_)) {
                        quote!(#[serde(rename = #json, default)] #vis #id: #ty)
                    } else {
                        quote!(#[serde(rename = #json, default)] #vis #id: crate::custom::Dflt<#ty>)
                    }
                } else if f.presence == Presence::RequiredNullable {
                    quote!(#[serde(rename = #json, deserialize_with = "crate::custom::nullable")] #vis #id: #ty)
                } else {
                    quote!(#[serde(rename = #json)] #vis #id: #ty)
                }
            })
            .collect()
    }

    /// A field set's `Track` walk as a `crate::track::Members` table (the runtime walks it). On a
    /// server walk the always-sent fields an object lacks are noted: serde accepts their absence
    /// (an `Option`, a default) where a required one would already have failed, so this is the
    /// only trace of a writer that drifted from the real server.
    fn members(&self, fields: &[Field]) -> TokenStream {
        let members: Vec<TokenStream> = fields
            .iter()
            .filter(|f| !f.flatten)
            .map(|f| {
                let json = &f.json;
                let seg = crate::segment::segment(json);
                let ty = self.track_ty(&f.ty);
                quote!(crate::track::Member { key: #json, seg: #seg, track: <#ty as Track>::track })
            })
            .collect();
        let flats: Vec<TokenStream> = fields
            .iter()
            .filter(|f| f.flatten)
            .map(|f| {
                let ty = self.track_ty(&f.ty);
                quote!(<#ty as Track>::flat)
            })
            .collect();
        let sent: Vec<&String> = fields
            .iter()
            .filter(|f| f.sent && !f.flatten)
            .map(|f| &f.json)
            .collect();
        quote! {
            crate::track::Members {
                fields: &[#(#members),*],
                flats: &[#(#flats),*],
                sent: &[#(#sent),*],
            }
        }
    }

    /// `fast`: whether the type gets a `Fast` impl, and whether with `fast_fields` (a tagged
    /// variant's body).
    fn emit_type(&self, t: &TypeDef, fast: Option<bool>) -> TokenStream {
        if let Some(name) = &t.serde_name {
            let m = format_ident!("r#{}", snake(&t.ident));
            let inner = self.emit_type(
                &TypeDef {
                    ident: name.clone(),
                    serde_name: None,
                    kind: t.kind.clone(),
                },
                fast,
            );
            return quote! {
                pub mod #m {
                    use super::*;
                    #inner
                }
            };
        }
        let name = ident(&t.ident);
        let rename: Option<TokenStream> = None;
        match &t.kind {
            Kind::Alias(ty) => {
                let ty = self.rust_ty(ty, false);
                quote!(pub type #name = #ty;)
            }
            Kind::Struct { fields, deny } => {
                let fs = self.fields(fields);
                let fast = fast.map(|tagged| self.fast_struct(&name, fields, *deny, tagged));
                let deny = deny.then(|| quote!(#[serde(deny_unknown_fields)]));
                let members = self.members(fields);
                quote! {
                    #fast
                    #[derive(Debug, Deserialize)]
                    #deny
                    #rename
                    pub struct #name { #(#fs,)* }
                    impl #name {
                        const TRACKED: &'static crate::track::Members = &#members;
                    }
                    impl Track for #name {
                        fn track(v: &serde_json::Value, p: &mut JsonPath, out: &mut Vec<String>) {
                            crate::track::track_members(Self::TRACKED, v, p, out)
                        }
                        fn flat(m: &serde_json::Map<String, serde_json::Value>, p: &mut JsonPath, out: &mut Vec<String>, taken: &mut [bool]) {
                            crate::track::claim_members(Self::TRACKED, m, p, out, taken)
                        }
                    }
                }
            }
            Kind::Enum { repr, variants } => {
                self.emit_enum(&name, rename, repr, variants, fast.is_some())
            }
        }
    }

    fn emit_enum(
        &self,
        name: &Ident,
        rename: Option<TokenStream>,
        repr: &Repr,
        variants: &[crate::model::Variant],
        fast: bool,
    ) -> TokenStream {
        let all_deny = all_deny(variants);
        let mut extra_items = Vec::new();
        let mut vs = Vec::new();
        let mut track_arms = Vec::new();
        let mut flat_arms = Vec::new();
        let mut untagged_tries = Vec::new();
        let mut untagged_flat = Vec::new();
        for v in variants {
            let vid = ident(&v.ident);
            let json = &v.json;
            let rename = if matches!(repr, Repr::Untagged) {
                quote!()
            } else {
                quote!(#[serde(rename = #json)])
            };
            match &v.body {
                Body::Other => {
                    vs.push(quote!(#[serde(other)] #vid));
                }
                Body::Unit => {
                    vs.push(quote!(#rename #vid));
                    track_arms.push(quote!(#json => {}));
                    flat_arms.push(quote!(#json => {}));
                }
                Body::Newtype(ty) => {
                    let rty = self.rust_ty(ty, true);
                    let tty = self.track_ty(ty);
                    vs.push(quote!(#rename #vid(#rty)));
                    match repr {
                        Repr::Untagged => {
                            untagged_tries.push(quote! {
                                if <#tty as serde::Deserialize>::deserialize(v).is_ok() {
                                    return <#tty as Track>::track(v, p, out);
                                }
                            });
                            untagged_flat.push(quote! {
                                if <#tty as serde::Deserialize>::deserialize(&rest).is_ok() {
                                    return <#tty as Track>::flat(m, p, out, taken);
                                }
                            });
                        }
                        Repr::External => {
                            track_arms.push(quote!(#json => <#tty as Track>::track(inner, p, out)));
                        }
                        Repr::Internal(_) => {
                            track_arms
                                .push(quote!(#json => <#tty as Track>::flat(m, p, out, taken)));
                            flat_arms
                                .push(quote!(#json => <#tty as Track>::flat(m, p, out, taken)));
                        }
                    }
                }
                Body::Struct { fields, deny } => {
                    if *deny && !all_deny {
                        // serde has no per-variant deny_unknown_fields: a newtype around a struct.
                        let inner = deny_variant_ident(name, &v.ident);
                        let item = self.emit_type(
                            &TypeDef {
                                ident: inner.to_string(),
                                serde_name: None,
                                kind: Kind::Struct {
                                    fields: fields.clone(),
                                    deny: true,
                                },
                            },
                            fast.then_some(true),
                        );
                        extra_items.push(item);
                        vs.push(quote!(#rename #vid(#inner)));
                        match repr {
                            Repr::External => track_arms
                                .push(quote!(#json => <#inner as Track>::track(inner, p, out))),
                            _ => {
                                track_arms.push(
                                    quote!(#json => <#inner as Track>::flat(m, p, out, taken)),
                                );
                                flat_arms.push(
                                    quote!(#json => <#inner as Track>::flat(m, p, out, taken)),
                                );
                            }
                        }
                        continue;
                    }
                    let fs = self.fields_vis(fields, false);
                    vs.push(quote!(#rename #vid { #(#fs,)* }));
                    let members = self.members(fields);
                    match repr {
                        Repr::External => {
                            track_arms.push(quote!(#json => crate::track::track_members(const { &#members }, inner, p, out)));
                        }
                        _ => {
                            let claim = quote!(crate::track::claim_members(const { &#members }, m, p, out, taken));
                            track_arms.push(quote!(#json => #claim));
                            flat_arms.push(quote!(#json => #claim));
                        }
                    }
                }
            }
        }
        let deny_attr = all_deny.then(|| quote!(#[serde(deny_unknown_fields)]));
        let (attr, track, flat) = match repr {
            // Untagged over leaf types (strings, numbers…): no keys below to report, so no
            // trial deserialization on the hot path.
            Repr::Untagged
                if variants
                    .iter()
                    .all(|v| matches!(&v.body, Body::Newtype(t) if is_leaf(t))) =>
            {
                (quote!(#[serde(untagged)]), quote!(), quote!())
            }
            Repr::Untagged => (
                quote!(#[serde(untagged)]),
                quote! { #(#untagged_tries)* },
                quote! {
                    let rest: serde_json::Value = serde_json::Value::Object(
                        m.iter().enumerate().filter(|(i, _)| !taken[*i]).map(|(_, (k, v))| (k.clone(), v.clone())).collect(),
                    );
                    #(#untagged_flat)*
                },
            ),
            Repr::External => (
                quote!(),
                quote! {
                    if let serde_json::Value::Object(m) = v {
                        if m.len() == 1 {
                            let (k, inner) = m.iter().next().unwrap();
                            p.key(k);
                            match k.as_str() { #(#track_arms,)* _ => {} }
                            p.pop();
                        }
                    }
                },
                quote!(let _ = (m, p, out, taken);),
            ),
            Repr::Internal(tag) => (
                quote!(#[serde(tag = #tag)]),
                quote! {
                    if let serde_json::Value::Object(m) = v {
                        let mut taken = vec![false; m.len()];
                        {
                            let taken = &mut taken;
                            Self::flat(m, p, out, taken);
                        }
                        report_untaken(m, &taken, p, out);
                    }
                },
                quote! {
                    let Some((i, (_, tv))) = m.iter().enumerate().find(|(_, (k, _))| k.as_str() == #tag) else { return };
                    taken[i] = true;
                    let Some(tag) = tv.as_str() else { return };
                    match tag { #(#flat_arms,)* _ => {} }
                },
            ),
        };
        let fast = fast.then(|| self.fast_enum(name, repr, variants));
        quote! {
            #fast
            #[derive(Debug, Deserialize)]
            #attr
            #deny_attr
            #rename
            pub enum #name { #(#vs,)* }
            impl Track for #name {
                #[allow(unused_variables)]
                fn track(v: &serde_json::Value, p: &mut JsonPath, out: &mut Vec<String>) { #track }
                #[allow(unused_variables)]
                fn flat(m: &serde_json::Map<String, serde_json::Value>, p: &mut JsonPath, out: &mut Vec<String>, taken: &mut [bool]) { #flat }
            }
            #(#extra_items)*
        }
    }
}

/// Whether every struct variant denies unknown fields (then the enum carries the attribute;
/// otherwise each denying variant is a newtype of its own, see [`deny_variant_ident`]).
fn all_deny(variants: &[crate::model::Variant]) -> bool {
    variants
        .iter()
        .filter(|v| matches!(v.body, Body::Struct { .. }))
        .all(|v| matches!(v.body, Body::Struct { deny: true, .. }))
        && variants
            .iter()
            .any(|v| matches!(v.body, Body::Struct { .. }))
}

/// The newtype struct of a denying variant in an enum whose other variants do not deny.
fn deny_variant_ident(enum_name: &Ident, variant: &str) -> Ident {
    format_ident!("{}{}", enum_name, variant)
}

/// A type whose values have no object keys of their own.
fn is_leaf(t: &Ty) -> bool {
    match t {
        Ty::Str | Ty::Path | Ty::Bool | Ty::Int(_) | Ty::Float(_) | Ty::Unit | Ty::Value => true,
        Ty::Opt(i) | Ty::Vec(i) => is_leaf(i),
        _ => false,
    }
}

/// The generated items of one version: one group (a type and its impls) per type.
fn type_groups(m: &Model) -> Vec<TokenStream> {
    let e = Emitter { m };
    let plan = e.fast_plan();
    m.types
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let fast = plan.reach.contains(&i).then(|| plan.tagged.contains(&i));
            e.emit_type(t, fast)
        })
        .collect()
}

/// Files of a version's real server that its `Protocol` carries verbatim (paths; None: absent).
pub struct Embeds {
    /// `tests/corpus/<V>/real_session.jsonl`.
    pub session: Option<String>,
    /// `schema/<V>/facts/turns.json`.
    pub turn_facts: Option<String>,
    /// `schema/<V>/facts/models.json`.
    pub models: Option<String>,
    /// `schema/<V>/facts/features.json`.
    pub features: Option<String>,
    /// `schema/<V>/facts/config.json`.
    pub config: Option<String>,
}

/// One version's tables, entry points and `PROTOCOL`: everything but the types.
fn version_api(m: &Model, version: &str, bundle: &str, embeds: &Embeds) -> TokenStream {
    let e = Emitter { m };
    let embed = |path: &Option<String>, absent: &str| match path {
        Some(path) => quote!(include_str!(#path)),
        None => quote!(#absent),
    };
    let captured = embed(&embeds.session, "");
    let turn_facts = embed(&embeds.turn_facts, "{}");
    let model_catalog = embed(&embeds.models, "[]");
    let feature_list = embed(&embeds.features, "[]");
    let config_facts = embed(&embeds.config, "{}");
    let fast_entries = e.fast_entries();
    let methods = &m.client_methods;
    // `method => Some(check_typed::<ResponseType>(v))`, for either direction's result table.
    let check_arms = |table: &[(String, usize)]| -> Vec<TokenStream> {
        table
            .iter()
            .map(|(method, t)| {
                let ty = e.path_of(*t);
                quote!(#method => Some(check_typed::<#ty>(v, p)))
            })
            .collect()
    };
    let resp_arms = check_arms(&m.server_responses);
    let resp_methods: Vec<&String> = m.server_responses.iter().map(|(s, _)| s).collect();
    let result_arms = check_arms(&m.client_results);
    let result_type_methods: Vec<&String> = m.client_result_types.iter().map(|(m, _)| m).collect();
    let result_type_names: Vec<&String> = m.client_result_types.iter().map(|(_, t)| t).collect();
    let exp_methods = &m.experimental_methods;
    // Per method, its gate checks as a slice literal; used by the table and the lookup.
    let exp_check_lists: Vec<(&String, TokenStream)> = m
        .experimental_checks
        .iter()
        .map(|(method, cs)| {
            let cs = cs.iter().map(|c| {
                let (f, v, r, n, fa) = (&c.field, &c.variant, &c.reason, c.null_set, c.false_set);
                quote!((#f, #v, #r, #n, #fa))
            });
            (method, quote!(&[#(#cs),*]))
        })
        .collect();
    let exp_check_arms: Vec<TokenStream> = exp_check_lists
        .iter()
        .map(|(method, list)| quote!(#method => #list))
        .collect();
    let exp_checks: Vec<TokenStream> = exp_check_lists
        .iter()
        .map(|(method, list)| quote!((#method, #list)))
        .collect();
    quote! {
        /// Client request methods, in the real server's declaration order.
        pub const CLIENT_METHODS: &[&str] = &[#(#methods),*];
        /// The static name of a client request method (a `match`: hot path).
        pub fn client_method(m: &str) -> Option<&'static str> {
            match m { #(#methods => Some(#methods),)* _ => None }
        }
        /// Client request methods that need the `experimentalApi` capability.
        pub const EXPERIMENTAL_METHODS: &[&str] = &[#(#exp_methods),*];
        /// Whether `method` needs the `experimentalApi` capability (a `match`: hot path).
        pub fn is_experimental_method(method: &str) -> bool {
            matches!(method, #(#exp_methods)|*)
        }
        /// The gate's checks for `method` (see [`EXPERIMENTAL_CHECKS`]).
        pub fn experimental_checks(method: &str) -> &'static [(&'static str, &'static str, &'static str, bool, bool)] {
            match method { #(#exp_check_arms,)* _ => &[] }
        }
        /// Per method, the experimental gate's checks on params fields, in the server's order:
        /// (field, variant or "" for the field itself, reason or "" for `method.field`,
        /// whether `null` counts as set, whether `false` counts as set).
        pub const EXPERIMENTAL_CHECKS: &[(&str, &[(&str, &str, &str, bool, bool)])] = &[#(#exp_checks),*];
        /// Server→client request methods whose response type is known.
        pub const SERVER_REQUEST_METHODS: &[&str] = &[#(#resp_methods),*];
        /// Client request method → its result type's definition key (`v2/` for the v2 ones).
        pub const CLIENT_RESULT_TYPES: &[(&str, &str)] = &[#((#result_type_methods, #result_type_names)),*];

        /// A `result` checked against `T`: the ignored paths, or the deserialization error.
        /// `p` is the message root (a server walk also collects absent always-sent keys there).
        fn check_typed<T: Track + for<'de> Deserialize<'de>>(v: &serde_json::Value, p: &mut JsonPath) -> Result<Vec<String>, String> {
            T::deserialize(v).map_err(|e| e.to_string())?;
            p.key("result");
            let mut out = Vec::new();
            T::track(v, p, &mut out);
            p.pop();
            Ok(out)
        }

        /// Checks a client's `result` for a server request of `method`. `None` for an unknown
        /// method.
        pub fn check_response(method: &str, v: &serde_json::Value) -> Option<Result<Vec<String>, String>> {
            let p = &mut JsonPath::root();
            match method { #(#resp_arms,)* _ => None }
        }

        /// Checks the server's `result` for a client request of `method` (schema drift).
        pub fn check_result(method: &str, v: &serde_json::Value) -> Option<Result<Vec<String>, String>> {
            check_result_at(method, v, &mut JsonPath::root())
        }

        /// [`check_result`] walked from `p`: with [`JsonPath::server`], `p` also collects the
        /// always-sent keys the result lacks.
        pub fn check_result_at(method: &str, v: &serde_json::Value, p: &mut JsonPath) -> Option<Result<Vec<String>, String>> {
            match method { #(#result_arms,)* _ => None }
        }
        #fast_entries

        fn envelope_of(m: &JSONRPCMessage) -> crate::Envelope {
            match m {
                JSONRPCMessage::V0(_) => crate::Envelope::Request,
                JSONRPCMessage::V1(_) => crate::Envelope::Notification,
                JSONRPCMessage::V2(_) => crate::Envelope::Response,
                JSONRPCMessage::V3(_) => crate::Envelope::Error,
            }
        }

        /// This version's entry points (see `crate::Protocol`).
        pub static PROTOCOL: crate::Protocol = crate::Protocol {
            version: #version,
            client_methods: CLIENT_METHODS,
            experimental_methods: EXPERIMENTAL_METHODS,
            experimental_table: EXPERIMENTAL_CHECKS,
            server_request_methods: SERVER_REQUEST_METHODS,
            client_result_types: CLIENT_RESULT_TYPES,
            bundle: include_str!(#bundle),
            captured_session: #captured,
            turn_facts: #turn_facts,
            models: #model_catalog,
            features: #feature_list,
            config: #config_facts,
            client_method,
            is_experimental_method,
            experimental_checks,
            check_response,
            check_result_at,
            fast_params,
            fast_response,
            envelope_text: |t| serde_json::from_str::<JSONRPCMessage>(t).ok().as_ref().map(envelope_of),
            envelope: |v| JSONRPCMessage::deserialize(v).ok().as_ref().map(envelope_of),
            track_envelope: |k, v, p, out| match k {
                crate::Envelope::Request => JSONRPCRequest::track(v, p, out),
                crate::Envelope::Notification => JSONRPCNotification::track(v, p, out),
                crate::Envelope::Response => JSONRPCResponse::track(v, p, out),
                crate::Envelope::Error => JSONRPCError::track(v, p, out),
            },
            client_request: |v| ClientRequest::deserialize(v).map(|r| matches!(r, ClientRequest::Initialize { .. })),
            track_client_request: ClientRequest::track,
            client_notification: |v| ClientNotification::deserialize(v).map(drop),
            server_request: |v| ServerRequest::deserialize(v).map(drop),
            track_server_request: ServerRequest::track,
            server_notification: |v| ServerNotification::deserialize(v).map(drop),
            track_server_notification: ServerNotification::track,
            jsonrpc_error: |v| JSONRPCError::deserialize(v).map(drop),
        };
    }
}

/// What an item group defines and mentions.
#[derive(Clone)]
struct Names {
    /// Its top-level names.
    defines: Vec<String>,
    /// Those that are types (structs, enums, aliases).
    types: BTreeSet<String>,
    /// Whether it defines nothing but types and their impls.
    all_types: bool,
    /// The types it gives a `Fast` impl.
    fast: BTreeSet<String>,
    /// Every identifier its `Fast` impls mention.
    fast_mentions: BTreeSet<String>,
    /// Every identifier it mentions.
    mentions: BTreeSet<String>,
}

fn names_of(group: &TokenStream) -> Names {
    use quote::ToTokens;
    fn walk(ts: TokenStream, out: &mut BTreeSet<String>) {
        for t in ts {
            match t {
                proc_macro2::TokenTree::Ident(i) => {
                    out.insert(i.to_string());
                }
                proc_macro2::TokenTree::Group(g) => walk(g.stream(), out),
                _ => {}
            }
        }
    }
    let file: syn::File =
        syn::parse2(group.clone()).unwrap_or_else(|e| panic!("generated code does not parse: {e}"));
    let mut n = Names {
        defines: Vec::new(),
        types: BTreeSet::new(),
        all_types: true,
        fast: BTreeSet::new(),
        fast_mentions: BTreeSet::new(),
        mentions: BTreeSet::new(),
    };
    for it in &file.items {
        let (name, is_type) = match it {
            syn::Item::Struct(i) => (i.ident.to_string(), true),
            syn::Item::Enum(i) => (i.ident.to_string(), true),
            syn::Item::Type(i) => (i.ident.to_string(), true),
            syn::Item::Mod(i) => (i.ident.to_string(), false),
            syn::Item::Fn(i) => (i.sig.ident.to_string(), false),
            syn::Item::Const(i) => (i.ident.to_string(), false),
            syn::Item::Static(i) => (i.ident.to_string(), false),
            syn::Item::Impl(i) => {
                let is_fast = i.trait_.as_ref().is_some_and(|(path, _)| {
                    path.segments.last().is_some_and(|s| s.ident == "Fast")
                });
                if let (true, syn::Type::Path(tp)) = (is_fast, &*i.self_ty) {
                    if let Some(s) = tp.path.segments.last() {
                        n.fast.insert(s.ident.to_string());
                    }
                    walk(i.to_token_stream(), &mut n.fast_mentions);
                }
                continue;
            }
            _ => {
                n.all_types = false;
                continue;
            }
        };
        if is_type {
            n.types.insert(name.clone());
        } else {
            n.all_types = false;
        }
        n.defines.push(name);
    }
    walk(group.clone(), &mut n.mentions);
    n
}

/// The module of one version: `0.171.0` → `v0_171_0`.
fn version_module(version: &str) -> Ident {
    format_ident!("v{}", version.replace(['.', '-'], "_"))
}

/// The parameter a shared generic type takes: the version it is instantiated for.
const PARAM: &str = "CwV";

/// Every version's protocol in one file. A type group (a type and its impls) whose code is
/// identical in several versions is emitted once, in a `shared_*` module, and used by each:
/// - as it is, when every generated name it mentions is itself shared as it is by the same
///   versions (a fixpoint demotes the others);
/// - otherwise generic over the version (`CwV: VersionTypes`): each mention of a name that
///   resolves differently per version becomes `<CwV as VersionTypes>::Name`, and each version
///   instantiates it with its own marker (`pub type Name = shared_…::Name<VersionMarker>`).
///   The compiler checks and expands the code once instead of once a version (most of the
///   generated crate's front end, the critical path of every build).
///
/// Everything else is emitted per version. `versions`: (version, path of its bundle, its
/// embedded files, model), oldest first.
pub fn emit_all(versions: &[(String, String, Embeds, Model)]) -> String {
    struct Group {
        tokens: TokenStream,
        code: String,
        names: Names,
    }
    // Per version: its groups, and which group defines each name.
    let mut groups: Vec<Vec<Group>> = Vec::new();
    let mut owner: Vec<HashMap<String, usize>> = Vec::new();
    // Names of each version's entry points: a group that mentions one is never shared.
    let mut api_names: Vec<Vec<String>> = Vec::new();
    // Most groups are the same code in every version: each code is read (parsed) once.
    let mut read: HashMap<String, Names> = HashMap::new();
    for (version, bundle, embeds, m) in versions {
        api_names.push(names_of(&version_api(m, version, bundle, embeds)).defines);
        let gs: Vec<Group> = type_groups(m)
            .into_iter()
            .map(|tokens| {
                let code = tokens.to_string();
                let names = read
                    .entry(code.clone())
                    .or_insert_with(|| names_of(&tokens))
                    .clone();
                Group {
                    code,
                    names,
                    tokens,
                }
            })
            .collect();
        let mut own = HashMap::new();
        for (i, g) in gs.iter().enumerate() {
            for d in &g.names.defines {
                own.insert(d.clone(), i);
            }
        }
        groups.push(gs);
        owner.push(own);
    }
    // A name is a type (a projection can stand for it) when it is one in every version that
    // defines it; it can be checked by the fast path when every such version's `Fast` covers it.
    let is_type = |name: &str| {
        (0..versions.len()).all(|v| match owner[v].get(name) {
            Some(&i) => groups[v][i].names.types.contains(name),
            None => true,
        })
    };
    let is_fast = |name: &str| {
        (0..versions.len()).all(|v| match owner[v].get(name) {
            Some(&i) => groups[v][i].names.fast.contains(name),
            None => true,
        })
    };
    // Candidate classes: (primary name, code) → versions holding exactly that code.
    let mut classes: BTreeMap<(String, String), Vec<usize>> = BTreeMap::new();
    for (v, gs) in groups.iter().enumerate() {
        for g in gs {
            if let Some(primary) = g.names.defines.first() {
                classes
                    .entry((primary.clone(), g.code.clone()))
                    .or_default()
                    .push(v);
            }
        }
    }
    #[derive(Clone, Copy, PartialEq)]
    enum Share {
        Plain,
        Generic,
        Demoted,
    }
    // loc[v][group] = Some(class index) when shared.
    let class_list: Vec<((String, String), Vec<usize>)> =
        classes.into_iter().filter(|(_, vs)| vs.len() > 1).collect();
    let mut loc: Vec<Vec<Option<usize>>> = groups.iter().map(|gs| vec![None; gs.len()]).collect();
    let mut share = vec![Share::Plain; class_list.len()];
    for (c, ((primary, _), vs)) in class_list.iter().enumerate() {
        for &v in vs {
            loc[v][owner[v][primary]] = Some(c);
        }
    }
    // Names a generic class projects: every generated name it mentions that is not shared as it
    // is by all of its versions (its own names included).
    let mut projected: Vec<BTreeSet<String>> = vec![BTreeSet::new(); class_list.len()];
    loop {
        let mut changed = false;
        for (c, ((primary, _), vs)) in class_list.iter().enumerate() {
            if share[c] == Share::Demoted {
                continue;
            }
            let g = &groups[vs[0]][owner[vs[0]][primary]];
            let mut proj = BTreeSet::new();
            let mut demote = false;
            for name in &g.names.mentions {
                if vs.iter().any(|&v| api_names[v].contains(name)) {
                    demote = true;
                    break;
                }
                let at: Vec<Option<Option<usize>>> = vs
                    .iter()
                    .map(|&v| owner[v].get(name).map(|&i| loc[v][i]))
                    .collect();
                let plain = match at[0] {
                    // Not a generated name in the first version: it must be one in none.
                    None => {
                        if at.iter().all(Option::is_none) {
                            continue;
                        }
                        demote = true;
                        break;
                    }
                    // Its own names: projected only if something else is.
                    _ if g.names.defines.contains(name) => continue,
                    Some(Some(k)) => {
                        share[k] == Share::Plain && at.iter().all(|x| *x == Some(Some(k)))
                    }
                    Some(None) => false,
                };
                if !plain {
                    if at.iter().any(Option::is_none) || !is_type(name) {
                        demote = true;
                        break;
                    }
                    proj.insert(name.clone());
                }
            }
            if !proj.is_empty() {
                proj.extend(
                    g.names
                        .defines
                        .iter()
                        .filter(|d| g.names.mentions.contains(*d))
                        .cloned(),
                );
            }
            // A projection has the bounds every version's type has: a `Fast` impl needs `Fast`.
            if !demote
                && proj
                    .iter()
                    .any(|n| g.names.fast_mentions.contains(n) && !is_fast(n))
            {
                demote = true;
            }
            // Only structs, enums and aliases (and their impls) take a parameter.
            if !demote && !proj.is_empty() && !g.names.all_types {
                demote = true;
            }
            // What the rewrite cannot express (a name in a value path, …) stays per version.
            if !demote && !proj.is_empty() && proj != projected[c] {
                demote = genericize(&g.tokens, &proj).is_err();
            }
            let now = if demote {
                Share::Demoted
            } else if proj.is_empty() {
                Share::Plain
            } else {
                Share::Generic
            };
            if now != share[c] {
                share[c] = now;
                changed = true;
                if now == Share::Demoted {
                    for &v in vs {
                        loc[v][owner[v][primary]] = None;
                    }
                }
            }
            projected[c] = proj;
        }
        if !changed {
            break;
        }
    }
    let preamble = quote! {
        use crate::track::{report_untaken, JsonPath, Track};
        use serde::Deserialize;
    };
    // One module per set of versions that shares groups.
    let mut shared: BTreeMap<Vec<usize>, Vec<usize>> = BTreeMap::new();
    for (c, (_, vs)) in class_list.iter().enumerate() {
        if share[c] != Share::Demoted {
            shared.entry(vs.clone()).or_default().push(c);
        }
    }
    let shared_name = |vs: &[usize]| {
        let parts: Vec<String> = vs.iter().map(|v| v.to_string()).collect();
        format_ident!("shared_{}", parts.join("_"))
    };
    // Every name some generic class projects: `VersionTypes`' associated types.
    let assoc: BTreeSet<String> = (0..class_list.len())
        .filter(|&c| share[c] == Share::Generic)
        .flat_map(|c| projected[c].iter().cloned())
        .collect();
    let mut out = Vec::new();
    let mut reexports: Vec<Vec<TokenStream>> = vec![Vec::new(); versions.len()];
    for (vs, cs) in &shared {
        let name = shared_name(vs);
        let source = version_module(&versions[vs[0]].0);
        let mut items = Vec::new();
        for &c in cs {
            let primary = &class_list[c].0 .0;
            let g = &groups[vs[0]][owner[vs[0]][primary]];
            let (tokens, generic) = if share[c] == Share::Generic {
                genericize(&g.tokens, &projected[c]).expect("checked by the fixpoint")
            } else {
                (g.tokens.clone(), BTreeSet::new())
            };
            items.push(tokens);
            for &v in vs {
                for d in &groups[v][owner[v][primary]].names.defines {
                    let d: Ident = syn::parse_str(d).expect("a generated name");
                    reexports[v].push(if generic.contains(&d.to_string()) {
                        quote!(pub type #d = super::#name::#d<VersionMarker>;)
                    } else {
                        quote!(pub use super::#name::#d;)
                    });
                }
            }
        }
        out.push(quote! {
            pub mod #name {
                #preamble
                use super::#source::*;
                #(#items)*
            }
        });
    }
    for (v, (version, bundle, embeds, m)) in versions.iter().enumerate() {
        let module = version_module(version);
        let own = groups[v]
            .iter()
            .enumerate()
            .filter(|(i, _)| loc[v][*i].is_none())
            .map(|(_, g)| &g.tokens);
        let api = version_api(m, version, bundle, embeds);
        let re = &reexports[v];
        let types = assoc.iter().map(|n| {
            let id: Ident = syn::parse_str(n).expect("a generated name");
            if owner[v].contains_key(n) {
                quote!(type #id = #id;)
            } else {
                quote!(type #id = super::Absent;)
            }
        });
        out.push(quote! {
            pub mod #module {
                #preamble
                #(#re)*
                #(#own)*
                /// This version, as the parameter of the types it shares generically.
                #[derive(Debug)]
                pub enum VersionMarker {}
                impl super::VersionTypes for VersionMarker { #(#types)* }
                #api
            }
        });
    }
    let all: Vec<TokenStream> = versions
        .iter()
        .map(|(v, ..)| {
            let m = version_module(v);
            quote!(&#m::PROTOCOL)
        })
        .collect();
    let decls = assoc.iter().map(|n| {
        let id: Ident = syn::parse_str(n).expect("a generated name");
        let fast = is_fast(n).then(|| quote!(+ crate::fast::Fast));
        quote!(type #id: core::fmt::Debug + for<'de> serde::Deserialize<'de> + crate::track::Track #fast;)
    });
    let file = quote! {
        /// Every version, oldest first.
        pub static VERSIONS: &[&crate::Protocol] = &[#(#all),*];
        /// What a version names by each name that differs between the versions sharing a type
        /// generically (a version without the name: [`Absent`]).
        pub trait VersionTypes: 'static + core::fmt::Debug { #(#decls)* }
        /// A name a version does not have; no value has this type.
        #[derive(Debug, serde::Deserialize)]
        pub enum Absent {}
        impl crate::track::Track for Absent {
            fn track(_: &serde_json::Value, _: &mut crate::track::JsonPath, _: &mut Vec<String>) {}
        }
        impl crate::fast::Fast for Absent {
            fn fast(_: &mut crate::fast::Scan, _: &mut crate::track::JsonPath, _: &mut Vec<String>) -> crate::fast::R {
                Err(crate::fast::Bail)
            }
        }
        #(#out)*
    };
    let mut text = String::with_capacity(1 << 23);
    print(file, &mut text);
    text
}

/// Tokens as text, as `TokenStream`'s `Display` spaces them, but with a line break after each
/// `;` and `}`: on one line (what `Display` writes) rustc took ~40 % longer to build the same
/// tokens.
fn print(ts: TokenStream, out: &mut String) {
    use proc_macro2::{Delimiter, Spacing, TokenTree};
    for t in ts {
        match t {
            TokenTree::Group(g) => {
                let (open, close) = match g.delimiter() {
                    Delimiter::Parenthesis => ("(", ") "),
                    Delimiter::Brace => ("{ ", "}\n"),
                    Delimiter::Bracket => ("[", "] "),
                    Delimiter::None => ("", " "),
                };
                out.push_str(open);
                print(g.stream(), out);
                out.push_str(close);
            }
            TokenTree::Punct(p) => {
                out.push(p.as_char());
                match (p.spacing(), p.as_char()) {
                    (Spacing::Joint, _) => {}
                    (Spacing::Alone, ';') => out.push('\n'),
                    (Spacing::Alone, _) => out.push(' '),
                }
            }
            TokenTree::Ident(i) => {
                out.push_str(&i.to_string());
                out.push(' ');
            }
            TokenTree::Literal(l) => {
                out.push_str(&l.to_string());
                out.push(' ');
            }
        }
    }
}

/// One group rewritten generic over the version: each type-position mention of a name in
/// `proj` becomes `<CwV as VersionTypes>::Name`; each struct, enum or alias whose rewritten body
/// names the parameter takes it (and so do its impls). Returns the code and the names that
/// became generic, or why the group cannot be (it is then emitted per version).
fn genericize(
    tokens: &TokenStream,
    proj: &BTreeSet<String>,
) -> Result<(TokenStream, BTreeSet<String>), String> {
    use quote::ToTokens;
    use syn::visit_mut::VisitMut;
    struct Proj<'a>(&'a BTreeSet<String>, Option<String>);
    impl VisitMut for Proj<'_> {
        fn visit_type_mut(&mut self, t: &mut syn::Type) {
            if let syn::Type::Path(tp) = t {
                let path = &tp.path;
                if tp.qself.is_none()
                    && path.leading_colon.is_none()
                    && path.segments.len() == 1
                    && path.segments[0].arguments.is_none()
                    && self.0.contains(&path.segments[0].ident.to_string())
                {
                    let id = &path.segments[0].ident;
                    let param = ident(PARAM);
                    *t = syn::parse_quote!(<#param as super::VersionTypes>::#id);
                    return;
                }
            }
            syn::visit_mut::visit_type_mut(self, t);
        }
        fn visit_path_mut(&mut self, p: &mut syn::Path) {
            // Reached outside a type: a value or pattern path, which a projection cannot name.
            if let Some(first) = p.segments.first() {
                if self.0.contains(&first.ident.to_string()) {
                    self.1 = Some(format!("`{}` named outside a type", first.ident));
                }
            }
            syn::visit_mut::visit_path_mut(self, p);
        }
    }
    let names_param = |ts: TokenStream| {
        fn walk(ts: TokenStream) -> bool {
            ts.into_iter().any(|t| match t {
                proc_macro2::TokenTree::Ident(i) => i == PARAM,
                proc_macro2::TokenTree::Group(g) => walk(g.stream()),
                _ => false,
            })
        }
        walk(ts)
    };
    let mut file: syn::File = syn::parse2(tokens.clone())
        .unwrap_or_else(|e| panic!("generated code does not parse: {e}"));
    let param = ident(PARAM);
    let generics: syn::Generics = syn::parse_quote!(<#param: super::VersionTypes>);
    let mut generic = BTreeSet::new();
    let mut proj = Proj(proj, None);
    for item in &mut file.items {
        match item {
            syn::Item::Struct(i) => {
                proj.visit_fields_mut(&mut i.fields);
                if names_param(i.fields.to_token_stream()) {
                    i.generics = generics.clone();
                    i.attrs.push(syn::parse_quote!(#[serde(bound = "")]));
                    generic.insert(i.ident.to_string());
                }
            }
            syn::Item::Enum(i) => {
                for v in &mut i.variants {
                    proj.visit_fields_mut(&mut v.fields);
                }
                if i.variants
                    .iter()
                    .any(|v| names_param(v.fields.to_token_stream()))
                {
                    i.generics = generics.clone();
                    i.attrs.push(syn::parse_quote!(#[serde(bound = "")]));
                    generic.insert(i.ident.to_string());
                }
            }
            syn::Item::Type(i) => {
                proj.visit_type_mut(&mut i.ty);
                if names_param(i.ty.to_token_stream()) {
                    // An alias's bounds are not enforced (the projections are qualified).
                    i.generics = syn::parse_quote!(<#param>);
                    generic.insert(i.ident.to_string());
                }
            }
            syn::Item::Impl(_) => {}
            other => return Err(format!("an item {}", other.to_token_stream())),
        }
    }
    for item in &mut file.items {
        if let syn::Item::Impl(i) = item {
            let self_name = match &*i.self_ty {
                syn::Type::Path(tp) if tp.path.segments.len() == 1 => {
                    tp.path.segments[0].ident.clone()
                }
                other => return Err(format!("an impl for {}", other.to_token_stream())),
            };
            for it in &mut i.items {
                proj.visit_impl_item_mut(it);
            }
            if generic.contains(&self_name.to_string()) {
                i.generics = generics.clone();
                *i.self_ty = syn::parse_quote!(#self_name<#param>);
            } else if i.items.iter().any(|it| names_param(it.to_token_stream())) {
                panic!(
                    "generic sharing: impl for {self_name} names the version, its type does not"
                );
            }
        }
    }
    match proj.1 {
        Some(why) => Err(why),
        None => Ok((file.into_token_stream(), generic)),
    }
}
