Zermatt, Switzerland (CNN)Residents of a tiny hamlet in the canton of Valais were told to pack their bags on Monday after scientists warned that a hanging glacier above their valley could break apart within days.

Radar readings showed the ice sliding almost a meter every day, roughly ten times faster than in January, said Anneliese Brunner, who leads a field team for the International Glacier Monitoring Council.

"We are not trying to frighten anyone," Brunner told CNN. "But the glacier is talking to us, clearly and loudly, and I would rather move people a week too early than an hour too late."

Officials said families from Gletschmatt had been put up in hotels, and the only road up the valley would stay shut until further notice.

On a survey flight over the valley, Brunner spotted unusual cracking on the eastern lobe. Brunner refused to speculate, CNN was told.

The IGMC has since installed extra cameras and a seismic sensor on the ridge opposite Gletschmatt. Nobody has been hurt, and most of the livestock was herded down the slope before the closure.

Swiss mountain communities have lived with threats like this for generations, Brunner noted. Will the families from Gletschmatt ever be able to go back to their chalets?

Hoteliers across Zermatt have offered the displaced families free rooms and meals. The ice was sliding almost a meter every day, Brunner said.

CNN's Lorena Vidal reported from Zermatt, and Matthias Egger contributed from Bern.

@highlight

Scientists say a hanging glacier in the Alps could collapse within days

@highlight

About 140 residents of Gletschmatt have been moved into hotels in Zermatt

@highlight

Readings show the ice moving ten times faster than in January