import Testing
import PushCore

@Suite("Templates")
struct TemplateTests {
    static let properties: [String: String] = [
        "first_name": "Ayşe", "city": "İstanbul", "lower": "ılık", "empty": "", "ko": "민수",
        "emoji": "👩‍👩‍👧", "combining": "e\u{301}", "code": "{{ first_name }}", "html": "<b>x</b>",
        "user.name": "dotted", "isim": "küçük", "İsim": "büyük", "şehir": "İzmir",
    ]

    @Test("placeholders render from properties", arguments: [
        ("Hi {{ first_name }}", "Hi Ayşe"),
        ("Hi {{first_name}}!", "Hi Ayşe!"),
        ("{{   first_name\t}}", "Ayşe"),
        ("{{ city }} / {{ lower }}", "İstanbul / ılık"),
        ("안녕하세요 {{ ko }}님", "안녕하세요 민수님"),
        ("{{ emoji }} family", "👩‍👩‍👧 family"),
        ("caf{{ combining }}", "cafe\u{301}"),
        ("{{ first_name }}\u{301}", "Ayşe\u{301}"),
        ("{{ user.name }}", "dotted"),
        ("{{ isim }} {{ İsim }}", "küçük büyük"),
        ("{{ şehir }}", "İzmir"),
        ("{{ first_name }}{{ city }}", "Ayşeİstanbul"),
        ("no placeholders, 20% off", "no placeholders, 20% off"),
        ("", ""),
    ])
    func renders(source: String, expected: String) {
        #expect(Template(source).render(Self.properties) == expected)
    }

    @Test("defaults apply to missing and empty values only", arguments: [
        ("Hi {{ nobody }}", "Hi "),
        ("Hi {{ nobody | default: \"there\" }}", "Hi there"),
        ("Hi {{ nobody | default: 'there' }}", "Hi there"),
        ("Hi {{nobody|default:\"there\"}}", "Hi there"),
        ("Hi {{ empty | default: \"there\" }}", "Hi there"),
        ("Hi {{ empty }}", "Hi "),
        ("Hi {{ first_name | default: \"there\" }}", "Hi Ayşe"),
        ("{{ nobody | default: \"\" }}!", "!"),
        ("{{ nobody | default: \"Müşteri İ 😀 고객\" }}", "Müşteri İ 😀 고객"),
        ("{{ nobody | default: \"it's\" }}", "it's"),
        ("{{ nobody | default: 'say \"hi\"' }}", "say \"hi\""),
        ("{{ nobody | default: \"{{ x }}\" }}", "{{ x }}"),
    ])
    func defaults(source: String, expected: String) {
        #expect(Template(source).render(Self.properties) == expected)
    }

    @Test("values are inserted verbatim, never evaluated or re-expanded", arguments: [
        ("{{ code }}", "{{ first_name }}"),
        ("{{ html }}", "<b>x</b>"),
        ("{{ first_name | upcase }}", "{{ first_name | upcase }}"),
    ])
    func neverEvaluated(source: String, expected: String) {
        #expect(Template(source).render(Self.properties) == expected)
    }

    @Test("malformed placeholders stay literal text", arguments: [
        "{{ first_name", "{{ }}", "{{}}", "{ first_name }", "{{ first name }}", "{{ a | default: \"x }}",
        "{{ a | default: x }}", "{{ a | default \"x\" }}", "{{ a | fallback: \"x\" }}", "{{ a }", "}} {{",
        "{{ a | default: \"x\" \"y\" }}", "{{\n a }}", "{{ {{ }}",
    ])
    func malformed(source: String) {
        let template = Template(source)
        #expect(template.render(Self.properties) == source)
        #expect(template.isConstant)
    }

    @Test("text around a malformed opening still finds later placeholders", arguments: [
        ("{{{ first_name }}", "{Ayşe"),
        ("{{ broken {{ first_name }}", "{{ broken Ayşe"),
        ("a }} {{ city }} {{", "a }} İstanbul {{"),
    ])
    func mixed(source: String, expected: String) {
        #expect(Template(source).render(Self.properties) == expected)
    }

    @Test("property names match exactly: no case folding, Turkish dotted I stays distinct")
    func exactNames() {
        #expect(Template("{{ First_Name }}").render(Self.properties) == "")
        #expect(Template("{{ ISIM }}").render(Self.properties) == "")
        #expect(Template("{{ isim }}").render(["İSİM": "x", "isim": "y"]) == "y")
    }

    @Test("parsing records variables and constants once")
    func parsedStructure() {
        let template = Template("Hi {{ first_name | default: \"there\" }}, {{ city }}")
        #expect(template.variableNames == ["first_name", "city"])
        #expect(!template.isConstant)
        #expect(template.source == "Hi {{ first_name | default: \"there\" }}, {{ city }}")
        #expect(Template("plain").isConstant)
        #expect(template.render([:]) == "Hi there, ")
    }
}
