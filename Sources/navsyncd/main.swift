import NavSync
var s = Sequencer(flow: .demo, epoch: "x")
print(s.state.json)
for ops: [JSON] in [[["op": "setRoot", "route": "main"]], [["op": "push", "route": "detail", "params": ["id": 42]]], [["op": "open", "url": "/product/7?note=hi"]], [["op": "open", "url": "app://settings/notifications?on=1"]], [["op":"dismiss"]], [["op":"pop", "from": "e40"]]] {
  let r = s.submit(Command(id: .int(1 + Int64(s.rev)), ops: ops), client: "c")
  print(r)
}
print(s.state.json)
